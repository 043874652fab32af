package similarity

import (
	"cmp"
	"slices"
	"strings"
)

// Doc is one learner's code: their latest submission's solution cells.
type Doc struct {
	SubmissionID string `json:"submission_id"`
	Learner      string `json:"learner"`
	Source       string `json:"-"`
}

// Options tune a report; zero values take the defaults.
type Options struct {
	// Threshold is the least score a pair is reported with (default 0.5).
	Threshold float64
	// MinShared is the least number of shared fingerprints (default 4).
	MinShared int
	// Limit caps the pairs reported (default 50).
	Limit int
}

// Pair is two learners whose code shares fingerprints.
type Pair struct {
	A Doc `json:"a"`
	B Doc `json:"b"`
	// Score is the shared fingerprints over the fingerprints of the
	// shorter of the two, in [0, 1].
	Score     float64    `json:"score"`
	Shared    int        `json:"shared"`
	Fragments []Fragment `json:"fragments"`
}

// Fragment is one stretch of matching code, in each learner's code.
type Fragment struct {
	ALines [2]int `json:"a_lines"` // first and last line, 1-based
	BLines [2]int `json:"b_lines"`
	AText  string `json:"a_text"`
	BText  string `json:"b_text"`
}

// Report is the similarity report of one exercise.
type Report struct {
	Exercise    string `json:"exercise"`
	Submissions int    `json:"submissions"`
	// Compared is how many pairs shared any fingerprint; MedianScore is
	// their median, the class's baseline for "unusually similar".
	Compared    int     `json:"compared"`
	MedianScore float64 `json:"median_score"`
	Pairs       []Pair  `json:"pairs"`
	// Ignored counts fingerprints of the starter and of idioms most
	// submissions share.
	Ignored int `json:"ignored"`
}

type prepared struct {
	doc   Doc
	toks  []token
	lines []string
	fps   map[uint64][]int // kept hash → k-gram positions
}

// maxFragments and maxFragmentLines bound what one pair shows.
const (
	maxFragments     = 12
	maxFragmentLines = 60
	maxRepeats       = 8
	maxMatches       = 4000
)

// Compare builds the report of docs, ignoring every k-gram of starter.
func Compare(exercise, starter string, docs []Doc, o Options) Report {
	if o.Threshold <= 0 {
		o.Threshold = 0.5
	}
	if o.MinShared <= 0 {
		o.MinShared = 4
	}
	if o.Limit <= 0 {
		o.Limit = 50
	}
	rep := Report{Exercise: exercise, Submissions: len(docs), Pairs: []Pair{}}
	ignore := map[uint64]bool{}
	for _, h := range kgrams(tokenize(starter)) {
		ignore[h] = true
	}
	ps := make([]*prepared, len(docs))
	df := map[uint64]int{}
	for i, d := range docs {
		p := &prepared{doc: d, toks: tokenize(d.Source), lines: strings.Split(d.Source, "\n"), fps: map[uint64][]int{}}
		for _, f := range winnow(kgrams(p.toks)) {
			if ignore[f.hash] {
				rep.Ignored++
				continue
			}
			if len(p.fps[f.hash]) == 0 {
				df[f.hash]++
			}
			p.fps[f.hash] = append(p.fps[f.hash], f.pos)
		}
		ps[i] = p
	}
	// An idiom most of the class writes says nothing about two of them
	// (MOSS's -m); a fingerprint only two share is never one.
	index := map[uint64][]int{}
	for i, p := range ps {
		for h := range p.fps {
			if n := df[h]; n > 2 && 2*n > len(docs) {
				delete(p.fps, h)
				rep.Ignored++
				continue
			}
			if df[h] >= 2 {
				index[h] = append(index[h], i)
			}
		}
	}
	shared := map[[2]int]int{}
	for _, holders := range index {
		for x := 0; x < len(holders); x++ {
			for y := x + 1; y < len(holders); y++ {
				a, b := min(holders[x], holders[y]), max(holders[x], holders[y])
				shared[[2]int{a, b}]++
			}
		}
	}
	var scores []float64
	var pairs []Pair
	for k, n := range shared {
		a, b := ps[k[0]], ps[k[1]]
		score := float64(n) / float64(max(1, min(len(a.fps), len(b.fps))))
		scores = append(scores, score)
		if score >= o.Threshold && n >= o.MinShared {
			pairs = append(pairs, Pair{A: a.doc, B: b.doc, Score: score, Shared: n})
		}
	}
	rep.Compared = len(scores)
	if len(scores) > 0 {
		slices.Sort(scores)
		rep.MedianScore = scores[len(scores)/2]
	}
	slices.SortFunc(pairs, func(x, y Pair) int {
		return cmp.Or(cmp.Compare(y.Score, x.Score), cmp.Compare(y.Shared, x.Shared),
			cmp.Compare(x.A.Learner, y.A.Learner), cmp.Compare(x.B.Learner, y.B.Learner))
	})
	if len(pairs) > o.Limit {
		pairs = pairs[:o.Limit]
	}
	byID := map[string]*prepared{}
	for _, p := range ps {
		byID[p.doc.SubmissionID] = p
	}
	for i := range pairs {
		pairs[i].Fragments = fragments(byID[pairs[i].A.SubmissionID], byID[pairs[i].B.SubmissionID])
	}
	rep.Pairs = append(rep.Pairs, pairs...)
	return rep
}

// fragments chains the pair's matching k-grams, in A's order, into
// stretches that advance together in both, and returns each stretch's
// lines in A and in B.
func fragments(a, b *prepared) []Fragment {
	type match struct{ pa, pb int }
	var ms []match
	for h, pas := range a.fps {
		pbs, ok := b.fps[h]
		if !ok {
			continue
		}
		// A k-gram repeated many times (hostile or generated code) must
		// not make the pair's matches quadratic.
		for _, pa := range pas[:min(len(pas), maxRepeats)] {
			for _, pb := range pbs[:min(len(pbs), maxRepeats)] {
				ms = append(ms, match{pa, pb})
			}
		}
		if len(ms) >= maxMatches {
			break
		}
	}
	slices.SortFunc(ms, func(x, y match) int { return cmp.Or(cmp.Compare(x.pa, y.pa), cmp.Compare(x.pb, y.pb)) })
	var out []Fragment
	used := make([]bool, len(ms))
	for i := range ms {
		if used[i] {
			continue
		}
		used[i] = true
		a0, a1, b0, b1 := ms[i].pa, ms[i].pa, ms[i].pb, ms[i].pb
		for j := i + 1; j < len(ms); j++ {
			if used[j] || ms[j].pa > a1+K+W || ms[j].pb < b1 || ms[j].pb > b1+K+W {
				continue
			}
			used[j] = true
			a1, b1 = ms[j].pa, ms[j].pb
		}
		out = append(out, Fragment{
			ALines: [2]int{a.toks[a0].line, a.toks[min(a1+K-1, len(a.toks)-1)].line},
			BLines: [2]int{b.toks[b0].line, b.toks[min(b1+K-1, len(b.toks)-1)].line},
		})
	}
	out = mergeFragments(out)
	if len(out) > maxFragments {
		out = out[:maxFragments]
	}
	for i := range out {
		out[i].AText = excerpt(a.lines, out[i].ALines)
		out[i].BText = excerpt(b.lines, out[i].BLines)
	}
	return out
}

// mergeFragments joins fragments whose lines overlap in both documents.
func mergeFragments(fs []Fragment) []Fragment {
	var out []Fragment
	for _, f := range fs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if f.ALines[0] <= last.ALines[1]+1 && f.BLines[0] <= last.BLines[1]+1 && f.BLines[1] >= last.BLines[0]-1 {
				last.ALines[1] = max(last.ALines[1], f.ALines[1])
				last.BLines[0], last.BLines[1] = min(last.BLines[0], f.BLines[0]), max(last.BLines[1], f.BLines[1])
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// excerpt is lines [from, to] (1-based), at most maxFragmentLines.
func excerpt(lines []string, r [2]int) string {
	from, to := max(r[0], 1), min(r[1], len(lines))
	if to-from+1 > maxFragmentLines {
		to = from + maxFragmentLines - 1
	}
	if from > to {
		return ""
	}
	return strings.Join(lines[from-1:to], "\n")
}
