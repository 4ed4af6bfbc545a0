package discovery

// weights are the ranking's measured constants, in one place: the
// evaluation (eval_test.go) chose them on the dev half of its requests. An
// index reads them and never changes them.
type weights struct {
	// field and b are each field's BM25F weight and length normalization.
	field, b [nFields]float32
	// detailDF is what a tool counts in a term's document frequency when
	// the term is only in its detail fields (the description past its lead
	// sentence, arguments), not in a field that names it.
	detailDF float32
	// leaf is the weight of the bonus a query word earns on the tools whose
	// path ends in the resource it names.
	leaf float32
	// depthPenalty shrinks the score of deep paths a little per segment.
	depthPenalty float32
	// feedback is the weight of the pseudo-relevance feedback concept.
	feedback float32
	// duplicate scales the score of each further member of a family of
	// near-duplicates in one result list.
	duplicate float32
	// synKnown and synRare scale the general synonyms of a word the index
	// has, on many tools and on only a few ([rareDocs]).
	synKnown, synRare float32
}

var defaultWeights = weights{
	field: [nFields]float32{fName: 2.5, fTitle: 3, fLead: 2, fDesc: 0.5, fTags: 1.5, fPath: 2, fLeaf: 1,
		fParams: 0.3, fAction: 1.5, fItem: 1},
	b: [nFields]float32{fName: 0.4, fTitle: 0.5, fLead: 0.5, fDesc: 0.75, fTags: 0.3, fPath: 0.5, fLeaf: 0.2,
		fParams: 0.6, fAction: 0.2, fItem: 0},
	detailDF:     0.2,
	leaf:         0.5,
	depthPenalty: 0.04,
	feedback:     0.4,
	duplicate:    0.6,
	synKnown:     0.15,
	synRare:      0.5,
}
