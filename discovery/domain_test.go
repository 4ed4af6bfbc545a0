package discovery

import (
	"slices"
	"strings"
	"testing"
)

func TestParseThesaurus(t *testing.T) {
	th, err := ParseThesaurus("t.txt", `
# comment
out of office = mailboxSettings automaticReplies
out of = nothing
pass on = forward
my team = directReports
who am i = me
on acme cloud =
chargebacks: dispute
Ticket: issue the tickets
sub_sched_ = subscription schedule
meeting room = place
privately = chat
deleted users = deletedItems
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"set my out of office reply", "set my mailbox settings automatic replies reply"},
		{"out of ideas", "nothing ideas"}, // the shorter phrase where the longer does not match
		{"nothing here", "nothing here"},
		{"out", "out"},
		{"pass this message on to a colleague", "forward this message to a colleague"}, // parted by its object
		{"pass it on", "forward it"},
		{"show my team", "show direct reports my"}, // the caller's word stays
		{"who am i", "me"},
		{"list my servers on acme cloud", "list my servers"}, // a phrase that only names the product
		{"pass a b c d on", "pass a b c d on"},               // too far apart
		{"pass the ball off on", "pass the ball off on"},     // the nearest particle decides
		{"list the meeting rooms", "list the place"},         // a phrase of two words or more: by stems
		{"message her privately", "message her chat"},
		{"a private message", "a private message"}, // one word: as spelt only
		{"restore deleted user", "restore deleted items"},
		{"delete users", "delete users"}, // a participle matches as spelt only
	} {
		if got := strings.Join(th.rewrite(strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("rewrite(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Stand-ins are keyed and stored by stem; stop words and the word
	// itself are left out.
	if got := th.of(stem("chargeback")); !slices.Equal(got, []string{"disput"}) {
		t.Errorf("chargeback stands for %v", got)
	}
	if got := th.of(stem("ticket")); !slices.Equal(got, []string{"issu"}) {
		t.Errorf("ticket stands for %v", got)
	}
	if w, ok := th.idWords("sub_sched"); !ok || w != "subscription schedule" {
		t.Errorf("idWords(sub_sched) = %q, %v", w, ok)
	}
	if _, ok := th.idWords("pi"); ok {
		t.Error("an id prefix the table does not have was found")
	}
	var none *Thesaurus
	if got := none.rewrite([]string{"a"}); !slices.Equal(got, []string{"a"}) || none.of("x") != nil {
		t.Error("a nil thesaurus changes nothing")
	}
	if _, ok := none.idWords("pi"); ok {
		t.Error("a nil thesaurus knows an id")
	}
}

// TestKeepWhole: a word spelled in mixed case that a phrase of the table
// starts is kept whole for it; other words, all-capital words and texts
// without such a word are left as they are.
func TestKeepWhole(t *testing.T) {
	th, err := ParseThesaurus("t.txt", "github =\nonedrive = drive\nacme cloud =\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"delete my GitHub email", "delete my github email"},
		{"Take it off my GitHub, GitLab and OneDrive.", "Take it off my github, GitLab and onedrive."},
		{"list AcmeCloud and Acme cloud servers", "list AcmeCloud and Acme cloud servers"}, // only a whole first word
		{"GITHUB is loud", "GITHUB is loud"},
		{"naïve GitHub", "naïve github"},
		{"", ""},
	} {
		if got := th.keepWhole(c.in); got != c.want {
			t.Errorf("keepWhole(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	var raw []string
	words(th.keepWhole("my GitHub account"), func(w string) { raw = append(raw, w) })
	if got := strings.Join(th.rewrite(raw), " "); got != "my account" {
		t.Errorf("my GitHub account reads as %q, want the product's name left out", got)
	}
	var none *Thesaurus
	if got := none.keepWhole("GitHub"); got != "GitHub" {
		t.Errorf("a nil thesaurus changed %q", got)
	}
}

func TestJoinPhrasalVerbs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"set up a meeting", "setup a meeting"},
		{"turn the alerts off", "disable the alerts"},
		{"turn the email alerts off now", "disable the email alerts now"},
		{"turn a b c d off", "turn a b c d off"},
		{"look for repos", "search repos"},
		{"set the thing", "set the thing"},
		{"bring that version back", "restore that version"},
		{"tear down the staging environment", "delete the staging environment"},
		{"pull up the invoice", "get the invoice"},
		{"turn that invitation down", "decline that invitation"},
		{"take her out of the team", "remove her of the team"},
		{"take away her access", "remove her access"},
	} {
		if got := strings.Join(joinPhrasalVerbs(strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("joinPhrasalVerbs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseThesaurusRejects(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"chargeback dispute", `t.txt:1: "chargeback dispute": want "phrase = words" or "word: words"`},
		{"\n= dispute", `t.txt:2: "= dispute": no words before "="`},
		{"chargeback:", `t.txt:1: "chargeback:": no words after ":"`},
		{"in acme = -", `t.txt:1: "in acme = -": no words after "=" (nothing after it leaves the phrase out)`},
		{"charge back: dispute", `a stand-in entry is for one word`},
		{"the: dispute", `"the" is a stop word`},
		{"file: files", `no word after ":" but "file" itself`},
		{"file: drive\nfiles: folder", `t.txt:2: "files: folder": "file" is already defined on line 1`},
		{"say yes = accept\nsay  yes = approve", `t.txt:2: "say  yes = approve": "say yes" is already defined on line 1`},
		{"PI_ = payment intent", `an id's prefix is lower-case letters before "_"`},
		{"pi_ =", `no words after "=" for the id's object`},
		{"pi_ = " + strings.Repeat("word ", 10), `an id's object is named in at most 48 bytes`},
		{"pi_ = payment intent\npi_ = price", `t.txt:2: "pi_ = price": "pi_" is already defined on line 1`},
	} {
		_, err := ParseThesaurus("t.txt", c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseThesaurus(%q) = %v, want an error with %q", c.text, err, c.want)
		}
	}
}

func TestThesaurusWith(t *testing.T) {
	base, err := ParseThesaurus("base", "say yes = accept\nbug: issue\nthumbs up = reaction")
	if err != nil {
		t.Fatal(err)
	}
	extra, err := ParseThesaurus("extra", "say yes = approve\nbug: defect\nsay yes please = confirm")
	if err != nil {
		t.Fatal(err)
	}
	got := base.with(extra)
	for _, c := range []struct{ in, want string }{
		{"say yes please", "confirm"},
		{"say yes", "approve"},
		{"thumbs up", "reaction"},
	} {
		if r := strings.Join(got.rewrite(strings.Fields(c.in)), " "); r != c.want {
			t.Errorf("rewrite(%q) = %q, want %q", c.in, r, c.want)
		}
	}
	if s := got.of(stem("bug")); !slices.Equal(s, []string{stem("defect")}) {
		t.Errorf("bug stands for %v, want the operator's defect", s)
	}
	if r := strings.Join(base.rewrite([]string{"say", "yes"}), " "); r != "accept" {
		t.Errorf("with changed its receiver: %q", r)
	}
}

// TestThesaurusSearch: an operator's entries reach a search, and the
// embedded table can be left out.
func TestThesaurusSearch(t *testing.T) {
	th, err := ParseThesaurus("ops.txt", "critter: pet\nzorp the zing = place order")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opts  Options
		query string
		want  string
	}{
		{Options{Thesaurus: th}, "list critters", "listPets"},
		{Options{Thesaurus: th, NoThesaurus: true}, "list critters", "listPets"},
		{Options{Thesaurus: th}, "zorp the zing", "placeOrder"},
		{Options{}, "critters", ""},
		{Options{}, "zorp the zing", ""},
	} {
		rs, err := petIndex(t, c.opts).Search(t.Context(), Query{Text: c.query})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if len(rs) > 0 {
			got = rs[0].Name
		}
		if got != c.want {
			t.Errorf("NoThesaurus %v: %q found %v, want %q first", c.opts.NoThesaurus, c.query, names(rs), c.want)
		}
	}
}

// TestDomainTable checks the embedded domain thesaurus: it parses, and each
// entry leads to words that web APIs use (every stand-in, and some word of
// every rewrite, is in the tools of a corpus document), so no entry is dead.
func TestDomainTable(t *testing.T) {
	th, err := ParseThesaurus("domain.txt", domainText)
	if err != nil {
		t.Fatal(err)
	}
	if len(th.rewrites) < 50 || len(th.standIns) < 50 {
		t.Fatalf("domain.txt: %d rewrites' first words, %d stand-ins: the table was not read", len(th.rewrites), len(th.standIns))
	}
	vocab := apiVocabulary(t, 1)
	for w := range selfWords {
		vocab[stem(w)] = true
	}
	for key, stems := range th.standIns {
		for _, s := range stems {
			if !vocab[s] {
				t.Errorf("domain.txt: the stand-in %q of %q is in no corpus document", s, key)
			}
		}
	}
	for _, rules := range th.rewrites {
		for _, r := range rules {
			if len(r.to) > 0 && !slices.ContainsFunc(r.to, func(w string) bool { return vocab[stem(w)] }) {
				t.Errorf("domain.txt: %q is read as %q, none of whose words is in a corpus document", strings.Join(r.phrase, " "), r.to)
			}
		}
	}
	for prefix, ws := range th.ids {
		for w := range strings.FieldsSeq(ws) {
			if !vocab[stem(w)] {
				t.Errorf("domain.txt: the id prefix %q is read as %q, whose %q is in no corpus document", prefix+"_", ws, w)
			}
		}
	}
}
