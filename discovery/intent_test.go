package discovery

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestIntentParts(t *testing.T) {
	lex := fakeLexicon{verbs: "refund archive create delete email block star", words: "read write access drive list"}
	asked := func(s string) part { return part{text: s} }
	context := func(s string) part { return part{text: s, context: true} }
	for _, tc := range []struct {
		text string
		want []part
	}{
		{"list my invoices", []part{asked("list my invoices")}},
		{"archive #412 in acme/api, it's a dupe of #398", []part{asked("archive issue 0 in"), context("it's a dupe of 0")}},
		{"refund pi_3MxyzLk and cs_live_b7, not zz_9Q or snake_case", []part{asked("refund payment intent 0 and checkout session 0"), context("not  or snake_case")}},
		{"Refund the $40 for order #1182, the customer sent the shoes back",
			[]part{asked("Refund the $40 for order 0"), context("the customer sent the shoes back")}},
		{"We stopped maintaining legacy-api. Archive it so people know",
			[]part{asked("Archive it so people know"), context("We stopped maintaining legacy-api")}},
		// Nothing asks with a verb: every clause is the request, in order.
		{"my unread emails, newest first", []part{asked("my unread emails"), asked("newest first")}},
		{"Email dana@contoso.com and tell her", []part{asked("Email  and tell her")}},
		{"star vercel/next.js and read/write access", []part{asked("star  and read/write access")}},
		{"list /drive/{drive-id}/list and drive/list-access", []part{asked("list /drive/{drive-id}/list and drive/list-access")}},
		{"delete old-report.docx from my drive", []part{asked("delete file from my drive")}},
		{"create a hook for https://api.example.com/hooks.", []part{asked("create a hook for")}},
		{"put 'submit expense report' on my list", []part{asked("put   on my list"), context("submit expense report")}},
		{"Carla's \"draft\" isn't done", []part{asked("Carla's   isn't done"), context("draft")}},
		{"Put a new item in our catalog: ceramic mug, 12 oz",
			[]part{asked("Put a new item in our catalog"), context("ceramic mug, 12 oz")}},
		{"'buy milk'", []part{asked("buy milk")}},
		{"tag v1.4.0 now", []part{asked("tag v1.4.0 now")}},
		{"Maria Gonzalez's last day was today. Block her account",
			[]part{asked("Block her account"), context("Maria Gonzalez's last day was today")}},
		{"For the chargeback on order 5521, add a note. Refund it",
			[]part{asked("For the chargeback on order 5521"), asked("Refund it"), context("add a note")}},
		{"who's in acme/api? Please archive it", []part{asked("who's in"), asked("Please archive it")}},
	} {
		if got := intentParts(tc.text, lex); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("intentParts(%q) = %+v, want %+v", tc.text, got, tc.want)
		}
	}
	// Where the index knows repositories, an owner's name and a thing's
	// ("acme/api") say it is one; a deeper path or a host's name does not.
	repos := fakeLexicon{verbs: "star archive", words: "repository"}
	for text, want := range map[string]string{
		"star vercel/next.js now":          "star repo now",
		"archive acme/api/v2 and x.io/a/b": "archive  and",
		"archive release/2.3":              "archive", // a version, not a name
		"archive acme.io/tools":            "archive",
	} {
		if got := intentParts(text, repos); len(got) != 1 || strings.TrimSpace(got[0].text) != want {
			t.Errorf("intentParts(%q) = %+v, want %q", text, got, want)
		}
	}
}

func TestDropNames(t *testing.T) {
	lex := fakeLexicon{verbs: "add create set message", words: "team repo group marketing chat account teams"}
	for _, tc := range []struct{ text, want string }{
		{"Set up a new team called Project Falcon for the launch crew", "Set up a new team for the launch crew"},
		{"start a brand new repo named dotfiles on my account", "start a brand new repo on my account"},
		{"a repo called \"dotfiles\", please", "a repo called \"dotfiles\", please"}, // quoted: splitQuoted's
		{"a team titled Q4 Launch, for sales", "a team , for sales"},
		{"who called me", "who called me"},
		{"I called the support line", "I called the support line"},
		{"Add Ana to the Marketing group", "Add members to the Marketing group"},
		{"Invite Lisa Chen to the chat", "Invite members to the chat"},
		{"Add Ana's laptop to the group", "Add Ana's laptop to the group"},
		{"Message Jordan, he is late", "Message , he is late"},
		{"Message Jordan in our Teams chat. Jordan is late", "Message in our Teams chat. Jordan is late"},
		{"Tell Lisa Chen about the group", "Tell about the group"},
		{"put a file in my OneDrive", "put a file in my OneDrive"}, // spelled as a product
		{"Create a CFO account", "Create a CFO account"},
	} {
		if got := dropNames(tc.text, lex); got != tc.want {
			t.Errorf("dropNames(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// fakeLexicon knows the verbs and words it is given, space-separated.
type fakeLexicon struct{ verbs, words string }

func (l fakeLexicon) isVerb(w string) bool      { return slices.Contains(strings.Fields(l.verbs), w) }
func (l fakeLexicon) inThesaurus(w string) bool { return false }
func (l fakeLexicon) idWords(prefix string) (string, bool) {
	w, ok := map[string]string{"pi": "payment intent", "cs": "checkout session"}[prefix]
	return w, ok
}
func (l fakeLexicon) has(w string) bool {
	return l.isVerb(w) || slices.Contains(strings.Fields(l.words), w)
}

// FuzzIntentParts: any request splits without a panic into parts at most
// maxGrowth times as long, and a search with it answers (or says it has
// no words).
func FuzzIntentParts(f *testing.F) {
	for _, s := range []string{"Refund order #1182, the customer sent the shoes back",
		`put 'buy milk' on my list: "now"`, "We're done. Archive acme/api", "a.pdf b/c d@e.f https://x.y/z",
		`"a"a"a"a 'b'b'b`, "“curly” ‘quotes’", ": , . ? ! ;"} {
		f.Add(s)
	}
	ix := petIndex(f, Options{})
	lex := fakeLexicon{verbs: "refund archive list put", words: "order customer shoes"}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > MaxQueryBytes {
			return
		}
		n := 0
		for _, p := range intentParts(text, lex) {
			n += len(p.text)
		}
		// A value may be read as a few words ("#412": issue, an id as its
		// object's words, at most maxIDWords bytes), never more.
		if n > maxGrowth*len(text) {
			t.Fatalf("intentParts(%q): %d bytes of parts from %d", text, n, len(text))
		}
		if _, err := ix.Search(context.Background(), Query{Text: text}); err != nil && !strings.Contains(err.Error(), "no searchable words") {
			t.Fatalf("Search(%q): %v", text, err)
		}
	})
}
