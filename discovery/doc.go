// Package discovery lets an agent use an API too large to list: instead of
// one MCP tool per operation, a gateway in discovery mode lists three tools,
// search, describe and call, and serves them from an index of every tool.
//
// It owns:
//   - the index ([New], [Index.Search], [Index.Lookup]) over the tools of one
//     or several APIs, built once at load from [Doc] values ([FromTools]
//     fills them from generated tools and the [Operations] of their
//     document, read before generation consumes it ([ReadOperations]) or
//     as generation walks its path items ([Operations.Read]));
//   - the ranking (below) and its evaluation (testdata/eval, eval_test.go);
//   - optional semantic re-ranking through an OpenAI-compatible embeddings
//     endpoint ([Embedder], off unless configured);
//   - the three tools' definitions and results ([Catalog]: [Catalog.Tools],
//     [Catalog.Search], [Catalog.Describe], [ParseCall]); the gateway routes
//     call through its own chain;
//   - the mode decision ([ParseMode], [Decide]: auto switches to discovery
//     when the full tools/list would exceed a token budget) and pinning
//     ([Pinned]).
//
// Invariants:
//   - An index is immutable once built and safe for concurrent use; searches
//     never touch the network unless embeddings are configured, and never
//     fail because the embeddings endpoint does.
//   - A tool that a search's Visible predicate rejects never appears in its
//     results, and the results are the best visible tools (visibility is
//     applied before the cut, not after). [Index.Lookup],
//     [Catalog.Definition] and [Catalog.Describe] answer for a hidden tool
//     exactly as for an unknown one.
//   - Results are deterministic: same index, same query, same results (ties
//     go to the tool listed first).
//   - The three tools' tools/list entries together stay under 8 KiB for any
//     document (the API title is bounded).
//   - Cost: building is linear in the tools' text (descriptions are read up
//     to a bound); a search is linear in the postings of its terms.
//
// # Ranking
//
// Each tool is a set of fields weighed apart, BM25F-style: its operationId
// (or name), title, the first sentence of its description, the rest of the
// (whole) description, tags and schema names, literal path segments, the
// last of them (the resource acted on, indexed apart as "^word" terms),
// the words of its path parameters (the things it takes one of:
// "{issue_number}", indexed as "%word" terms), argument names with what
// the document says of them, and its actions. A
// tool that has a term only in its detail fields (the description past its
// lead, the arguments) counts 0.2 in that term's document frequency. The
// weights are in weights.go, measured on the evaluation's dev half.
//
// Text is split into words at case changes, underscores, dashes, dots and
// slashes, HTML and Markdown are stripped, digits and number words dropped,
// and words are stemmed (Porter2, via github.com/kljensen/snowball).
//
// A query's phrases are first read through the domain thesaurus
// (domain.txt, written by hand, plus an operator's [Options.Thesaurus];
// a phrase as spelt, else, of two words or more, by its words' stems; a
// product's name spelt in mixed case, "GitHub", as one word):
// "out of office" as mailbox settings and automatic replies, "say yes" as
// accept, "him" and "her" as a user; two-word verbs become one ("set up", "turn the alerts off": a
// particle may stand up to three words after its verb). It then becomes
// concepts; a tool earns each concept once, through
// its best variant:
//   - each content word, with its stand-ins: common abbreviations ("repo",
//     "pr"), the thesaurus's curated ones ("chargeback": dispute; they count
//     as the word itself), the general-language synonyms of synonyms.txt
//     (distilled from WordNet; they count more when the document lacks the
//     user's word), the aliases mined from the document itself (a path word
//     that the summaries spell differently, mine.go), the other verbs of its
//     action group, and the parts of a compound ("onedrive", "email");
//   - the actions its verbs name, from one vocabulary (vocab.go: list, get,
//     fetch, show … create, add, new … delete, remove, destroy …), matched
//     against each tool's actions, which come from its HTTP method (DELETE
//     is a delete, POST on an item an update) and the verbs of its name,
//     title and RPC-style last path segment (/cancel, /merge), and from the
//     document (a file response is a download, a file request body an
//     upload; an OData reference, POST …/members/$ref, adds to the
//     collection it names), and a title's created thing when it names an action
//     ("Create a fork" copies); a request has one verb, its first action
//     word, or the noun after a light verb ("make a copy"; "open"
//     reads a definite object: "open my notebook", and creates an
//     indefinite one: "open an issue"; "make it private" updates), and a
//     question ("which invoices …") has none but read, and list when it
//     asks for things in the plural; "all" implies a
//     list, "my" the caller's own resources (/me, GitHub's /user; not the
//     "me" of "show me"), and "who" the roles people play (members, users,
//     reviewers, attendees …);
//   - for each word, a bonus on the tools whose path ends in the resource
//     it (or a stand-in) names, and one on the tools that take one of it
//     when the request gives its number or id ("issue 212", "pi_3MxyzL");
//   - for the request's first word, a bonus on the tools whose title starts
//     with it: most APIs' summaries start with their verb ("Star a
//     repository"), also verbs of no action group.
//
// A request is read for what it asks first (intent.go): its values drop
// out (e-mail addresses, URLs, @handles, "owner/repo" names, which read as
// a repo where the index knows repositories; a file's name reads as
// "file", "#412" after a verb as an issue, an object's id as the object
// its prefix names in the thesaurus: "pi_3MxyzL" a payment intent),
// so do the name it
// gives a thing ("a team called Project Falcon") and the capitalized names
// neither the index nor the thesaurus knows ("Ana"; between "add" and
// "to" such a name reads as "members"), and its quoted text, what follows a colon and the
// sentences that tell the circumstances ("…, the customer sent the shoes
// back", "We think Dave's password leaked. Sign him out") are read after
// the clauses that ask, at half weight. The words of a clause that tells
// why or when ("… so I can find it later", "… after their laptop was
// stolen"), what comes along with the thing asked for ("… along with its
// rules", "… including the private ones") or what a message is to say
// ("… saying I'm on it") count half,
// and so do a question's words of an action other than reading ("what's
// new", "what changed"); a word that picks which one ("her last email")
// counts 0.3.
//
// A stand-in never counts for more than its word could (its idf is capped at
// the word's). The sum is scaled by the share of concepts a tool matched
// (coordination) and by a prior that prefers shorter paths; the words the
// five best tools share are added as one weak concept for a second pass
// (pseudo-relevance feedback), and near-duplicates (one operation reached
// through /me, /users/{id} and /groups/{id}, or under one root with one
// title) but one are demoted so that the first results show different
// operations: the one kept is the best whose scope (the path's first
// segment, or /me for "my") the query names, else the best.
//
// A query that names tools exactly, by a tool's name or operationId or by
// a path after its method or not ("GET /repos/{owner}/{repo}/pulls",
// parameters named as they like), puts them first (exact.go): an agent
// that knows the operation from documentation finds it.
//
// [PlainBM25] is the baseline the evaluation compares with: one bag of
// lower-cased words, no stemming, no synonyms.
package discovery
