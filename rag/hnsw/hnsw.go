// Package hnsw is an in-memory approximate nearest-neighbour index over
// unit vectors by cosine similarity: a Hierarchical Navigable Small World
// graph (Malkov and Yashunin, 2016) with the neighbour-selection heuristic,
// marked deletes, filtered search, and an exact "tail": vectors are added
// at once and searchable by exact scan until Link puts them in the graph,
// so a caller can add fast and link in the background.
//
// A Graph is not safe for concurrent use: guard Search with a read lock and
// Add, Link and Delete with a write lock.
//
//	g := hnsw.New(1536, hnsw.Config{})
//	slot := g.Add(vec)
//	for g.Unlinked() > 0 { g.Link() }
//	hits := g.Search(query, 10, 100, nil)
package hnsw

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/viterin/vek/vek32"
)

// Config tunes a graph. Zero values take the defaults.
type Config struct {
	// M is the number of links per node on upper layers (layer 0 has 2M).
	// Default 16.
	M int
	// EfConstruction is the candidate list size while linking. Default
	// 100: on 100,000 clustered 1536-dimension vectors, 64 linked only 1.2
	// times faster and lost 2 points of recall@10 (0.9655 against 0.985 at
	// ef 64).
	EfConstruction int
	// Seed makes level draws reproducible. Default 1.
	Seed uint64
}

// Hit is one result: the slot Add returned and its cosine similarity.
type Hit struct {
	Slot uint32
	Sim  float32
}

const pageBits = 10 // vectors per page: 1024

// Graph is the index. Slots are dense, in Add order.
type Graph struct {
	dims     int
	m, m0    int
	efc      int
	ml       float64
	rng      *rand.Rand
	pages    [][]float32 // vectors, 1<<pageBits per page
	n        int         // vectors added
	linked   int         // slots [0, linked) are in the graph
	levels   []uint8
	links0   []uint32 // slot*m0 ... layer-0 neighbours
	count0   []uint8
	upper    map[uint32][][]uint32 // layer 1.. neighbours of the few nodes above 0
	deleted  []bool
	ndeleted int
	entry    uint32
	top      int // level of entry; -1 when the graph is empty
	visited  sync.Pool
}

// New returns an empty graph of vectors of dims dimensions.
func New(dims int, cfg Config) *Graph {
	if cfg.M <= 0 {
		cfg.M = 16
	}
	if cfg.EfConstruction <= 0 {
		cfg.EfConstruction = 100
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	return &Graph{dims: dims, m: cfg.M, m0: 2 * cfg.M, efc: max(cfg.EfConstruction, cfg.M),
		ml: 1 / math.Log(float64(cfg.M)), rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		upper: map[uint32][][]uint32{}, top: -1}
}

// Dims is the vector dimension.
func (g *Graph) Dims() int { return g.dims }

// Len is the number of vectors added, deleted ones included.
func (g *Graph) Len() int { return g.n }

// Live is the number of vectors not deleted.
func (g *Graph) Live() int { return g.n - g.ndeleted }

// Deleted is the number of deleted vectors still taking a slot.
func (g *Graph) Deleted() int { return g.ndeleted }

// Unlinked is the number of vectors searchable only by exact scan.
func (g *Graph) Unlinked() int { return g.n - g.linked }

// Vector returns the stored (normalised) vector of slot. Do not modify it.
func (g *Graph) Vector(slot uint32) []float32 {
	p := g.pages[slot>>pageBits]
	off := int(slot&(1<<pageBits-1)) * g.dims
	return p[off : off+g.dims : off+g.dims]
}

// Add stores a copy of vec, normalised to unit length, and returns its slot.
// It is searchable at once (by exact scan until linked). vec must have Dims
// elements.
func (g *Graph) Add(vec []float32) uint32 {
	if len(vec) != g.dims {
		panic("hnsw: vector dimension mismatch")
	}
	slot := uint32(g.n)
	if int(slot>>pageBits) == len(g.pages) {
		g.pages = append(g.pages, make([]float32, (1<<pageBits)*g.dims))
	}
	dst := g.pages[slot>>pageBits][int(slot&(1<<pageBits-1))*g.dims:][:g.dims]
	copy(dst, vec)
	Normalize(dst)
	g.n++
	g.deleted = append(g.deleted, false)
	return slot
}

// Delete marks slot deleted: it is never returned again but stays in the
// graph as a waypoint. Rebuild when Deleted grows large.
func (g *Graph) Delete(slot uint32) {
	if int(slot) < g.n && !g.deleted[slot] {
		g.deleted[slot] = true
		g.ndeleted++
	}
}

// IsDeleted reports whether slot was deleted.
func (g *Graph) IsDeleted(slot uint32) bool { return g.deleted[slot] }

// Normalize scales v to unit length in place (a zero vector stays zero).
func Normalize(v []float32) {
	n := vek32.Dot(v, v)
	if n > 0 && n != 1 {
		vek32.MulNumber_Inplace(v, float32(1/math.Sqrt(float64(n))))
	}
}

func (g *Graph) dist(q []float32, slot uint32) float32 { return 1 - vek32.Dot(q, g.Vector(slot)) }

// Link puts the oldest unlinked vector into the graph. It reports false
// when every vector is linked.
func (g *Graph) Link() bool {
	if g.linked == g.n {
		return false
	}
	slot := uint32(g.linked)
	level := int(-math.Log(1-g.rng.Float64()) * g.ml)
	if level > 32 {
		level = 32
	}
	g.levels = append(g.levels, uint8(level))
	g.links0 = append(g.links0, make([]uint32, g.m0)...)
	g.count0 = append(g.count0, 0)
	if level > 0 {
		g.upper[slot] = make([][]uint32, level)
	}
	g.linked++
	if g.top < 0 {
		g.entry, g.top = slot, level
		return true
	}
	q := g.Vector(slot)
	ep := candidate{slot: g.entry, dist: g.dist(q, g.entry)}
	for l := g.top; l > level; l-- {
		ep = g.greedy(q, ep, l)
	}
	eps := []candidate{ep}
	for l := min(level, g.top); l >= 0; l-- {
		w := g.searchLayer(q, eps, g.efc, l, nil)
		maxLinks := g.m
		if l == 0 {
			maxLinks = g.m0
		}
		chosen := g.selectNeighbours(w, maxLinks)
		g.setLinks(slot, l, chosen)
		for _, c := range chosen {
			g.addLink(c.slot, slot, c.dist, l, maxLinks)
		}
		eps = w
	}
	if level > g.top {
		g.entry, g.top = slot, level
	}
	return true
}

func (g *Graph) links(slot uint32, level int) []uint32 {
	if level == 0 {
		base := int(slot) * g.m0
		return g.links0[base : base+int(g.count0[slot])]
	}
	return g.upper[slot][level-1]
}

func (g *Graph) setLinks(slot uint32, level int, cs []candidate) {
	if level == 0 {
		base := int(slot) * g.m0
		for i, c := range cs {
			g.links0[base+i] = c.slot
		}
		g.count0[slot] = uint8(len(cs))
		return
	}
	l := make([]uint32, len(cs), g.m)
	for i, c := range cs {
		l[i] = c.slot
	}
	g.upper[slot][level-1] = l
}

// addLink adds to's link from node, pruning node's links with the
// heuristic when they overflow.
func (g *Graph) addLink(node, to uint32, d float32, level, maxLinks int) {
	cur := g.links(node, level)
	if len(cur) < maxLinks {
		if level == 0 {
			g.links0[int(node)*g.m0+len(cur)] = to
			g.count0[node]++
		} else {
			g.upper[node][level-1] = append(cur, to)
		}
		return
	}
	v := g.Vector(node)
	cs := make([]candidate, 0, len(cur)+1)
	cs = append(cs, candidate{slot: to, dist: d})
	for _, s := range cur {
		cs = append(cs, candidate{slot: s, dist: g.dist(v, s)})
	}
	slices.SortFunc(cs, cmpCandidate)
	g.setLinks(node, level, g.selectNeighbours(cs, maxLinks))
}

// selectNeighbours is the heuristic of the paper (algorithm 4): walk the
// candidates nearest first and keep one only if it is nearer to the base
// than to every kept one, so links spread over directions instead of
// piling into one cluster. cs must be sorted by distance.
func (g *Graph) selectNeighbours(cs []candidate, m int) []candidate {
	if len(cs) <= m {
		return slices.Clone(cs)
	}
	out := make([]candidate, 0, m)
	for _, c := range cs {
		good := true
		cv := g.Vector(c.slot)
		for _, r := range out {
			if 1-vek32.Dot(cv, g.Vector(r.slot)) < c.dist {
				good = false
				break
			}
		}
		if good {
			out = append(out, c)
			if len(out) == m {
				break
			}
		}
	}
	return out
}

// greedy walks layer l from ep to the nearest node it can reach.
func (g *Graph) greedy(q []float32, ep candidate, l int) candidate {
	for changed := true; changed; {
		changed = false
		for _, s := range g.links(ep.slot, l) {
			if d := g.dist(q, s); d < ep.dist {
				ep, changed = candidate{slot: s, dist: d}, true
			}
		}
	}
	return ep
}

// searchLayer is the beam search of the paper (algorithm 2) with ef
// results. Nodes that fail ok (deleted, filtered out) are walked through
// but not returned. The result is sorted nearest first.
func (g *Graph) searchLayer(q []float32, eps []candidate, ef, l int, ok func(uint32) bool) []candidate {
	vis := g.visitSet()
	defer g.visited.Put(vis)
	var cands minHeap
	var res maxHeap
	for _, e := range eps {
		if vis.visit(e.slot) {
			continue
		}
		cands.push(e)
		if ok == nil || ok(e.slot) {
			res.push(e)
		}
	}
	for len(res.h) > ef {
		res.pop()
	}
	for len(cands.h) > 0 {
		c := cands.pop()
		if len(res.h) >= ef && c.dist > res.top().dist {
			break
		}
		for _, s := range g.links(c.slot, l) {
			if vis.visit(s) {
				continue
			}
			d := g.dist(q, s)
			if len(res.h) < ef || d < res.top().dist {
				cands.push(candidate{slot: s, dist: d})
				if ok == nil || ok(s) {
					res.push(candidate{slot: s, dist: d})
					if len(res.h) > ef {
						res.pop()
					}
				}
			}
		}
	}
	out := res.h
	slices.SortFunc(out, cmpCandidate)
	return out
}

// Search returns up to k live vectors nearest q, best first, searching the
// graph with a beam of ef (at least k) and scanning the unlinked tail
// exactly. allow, when not nil, keeps only the slots it accepts. q need
// not be normalised.
func (g *Graph) Search(q []float32, k, ef int, allow func(uint32) bool) []Hit {
	if k <= 0 || g.n == g.ndeleted {
		return nil
	}
	q = normalized(q)
	ok := func(s uint32) bool { return !g.deleted[s] && (allow == nil || allow(s)) }
	var found []candidate
	if g.top >= 0 {
		ep := candidate{slot: g.entry, dist: g.dist(q, g.entry)}
		for l := g.top; l > 0; l-- {
			ep = g.greedy(q, ep, l)
		}
		found = g.searchLayer(q, []candidate{ep}, max(ef, k), 0, ok)
	}
	if g.linked < g.n {
		found = append(found, g.scan(q, k, g.linked, g.n, ok)...)
		slices.SortFunc(found, cmpCandidate)
	}
	return hits(found, k)
}

// Exact returns the k live vectors nearest q by scanning every one: the
// ground truth Search approximates, and the fast path for small sets.
func (g *Graph) Exact(q []float32, k int, allow func(uint32) bool) []Hit {
	if k <= 0 {
		return nil
	}
	q = normalized(q)
	ok := func(s uint32) bool { return !g.deleted[s] && (allow == nil || allow(s)) }
	found := g.scan(q, k, 0, g.n, ok)
	slices.SortFunc(found, cmpCandidate)
	return hits(found, k)
}

// ExactSlots is Exact over the given slots only (a selective filter).
func (g *Graph) ExactSlots(q []float32, k int, slots []uint32) []Hit {
	q = normalized(q)
	var res maxHeap
	for _, s := range slots {
		if int(s) >= g.n || g.deleted[s] {
			continue
		}
		d := g.dist(q, s)
		if len(res.h) < k {
			res.push(candidate{slot: s, dist: d})
		} else if d < res.top().dist {
			res.pop()
			res.push(candidate{slot: s, dist: d})
		}
	}
	slices.SortFunc(res.h, cmpCandidate)
	return hits(res.h, k)
}

func (g *Graph) scan(q []float32, k, from, to int, ok func(uint32) bool) []candidate {
	var res maxHeap
	for i := from; i < to; i++ {
		s := uint32(i)
		if !ok(s) {
			continue
		}
		d := g.dist(q, s)
		if len(res.h) < k {
			res.push(candidate{slot: s, dist: d})
		} else if d < res.top().dist {
			res.pop()
			res.push(candidate{slot: s, dist: d})
		}
	}
	return res.h
}

func normalized(q []float32) []float32 {
	c := slices.Clone(q)
	Normalize(c)
	return c
}

func hits(cs []candidate, k int) []Hit {
	if len(cs) > k {
		cs = cs[:k]
	}
	out := make([]Hit, len(cs))
	for i, c := range cs {
		out[i] = Hit{Slot: c.slot, Sim: 1 - c.dist}
	}
	return out
}

type candidate struct {
	slot uint32
	dist float32
}

func cmpCandidate(a, b candidate) int {
	switch {
	case a.dist < b.dist:
		return -1
	case a.dist > b.dist:
		return 1
	}
	return int(a.slot) - int(b.slot)
}

// visitSet marks visited slots with a generation number, so it is reused
// across searches without clearing.
type visitSet struct {
	gen  uint32
	mark []uint32
}

func (g *Graph) visitSet() *visitSet {
	v, _ := g.visited.Get().(*visitSet)
	if v == nil {
		v = &visitSet{}
	}
	if len(v.mark) < g.n {
		v.mark = make([]uint32, g.n+g.n/4+1024)
		v.gen = 0
	}
	v.gen++
	if v.gen == 0 {
		clear(v.mark)
		v.gen = 1
	}
	return v
}

// visit marks s and reports whether it was already marked.
func (v *visitSet) visit(s uint32) bool {
	if v.mark[s] == v.gen {
		return true
	}
	v.mark[s] = v.gen
	return false
}

type minHeap struct{ h []candidate }

func (m *minHeap) push(c candidate) {
	m.h = append(m.h, c)
	i := len(m.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if m.h[p].dist <= m.h[i].dist {
			break
		}
		m.h[p], m.h[i] = m.h[i], m.h[p]
		i = p
	}
}

func (m *minHeap) pop() candidate {
	top := m.h[0]
	last := len(m.h) - 1
	m.h[0] = m.h[last]
	m.h = m.h[:last]
	down(m.h, func(a, b float32) bool { return a < b })
	return top
}

type maxHeap struct{ h []candidate }

func (m *maxHeap) top() candidate { return m.h[0] }

func (m *maxHeap) push(c candidate) {
	m.h = append(m.h, c)
	i := len(m.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if m.h[p].dist >= m.h[i].dist {
			break
		}
		m.h[p], m.h[i] = m.h[i], m.h[p]
		i = p
	}
}

func (m *maxHeap) pop() candidate {
	top := m.h[0]
	last := len(m.h) - 1
	m.h[0] = m.h[last]
	m.h = m.h[:last]
	down(m.h, func(a, b float32) bool { return a > b })
	return top
}

// down restores the heap property from the root; before(a, b) is true when
// a belongs above b.
func down(h []candidate, before func(a, b float32) bool) {
	i, n := 0, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		best := l
		if r := l + 1; r < n && before(h[r].dist, h[l].dist) {
			best = r
		}
		if !before(h[best].dist, h[i].dist) {
			return
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
}
