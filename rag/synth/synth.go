// Package synth makes clustered synthetic embeddings for benchmarks and
// tests of the retrieval index: not uniform noise, which no real corpus
// looks like and on which every index is either trivially good or
// hopeless, but vectors drawn around topics and sub-topics the way chunks
// of documents on a few subjects cluster.
//
// A vector is normalize(topic + 0.7·subtopic + 0.6·noise) with every part a
// random unit vector: two chunks of one sub-topic (think: one document)
// have cosine about 0.8, of one topic about 0.55, of different topics
// about 0. Queries come from the same distribution with fresh noise, so
// they are near the data but never in it.
//
//	g := synth.New(1536, 100_000, 1)
//	v := g.Next()
package synth

import (
	"math"
	"math/rand/v2"
)

// Gen draws vectors. It is not safe for concurrent use.
type Gen struct {
	dims   int
	r      *rand.Rand
	topics [][]float32
	subs   [][]float32
}

// New returns a generator for a corpus of about n vectors: n/2000 topics
// (at least 20) and n/50 sub-topics (at least 200), so sub-topics hold
// about 50 vectors whatever the size.
func New(dims, n int, seed uint64) *Gen {
	g := &Gen{dims: dims, r: rand.New(rand.NewPCG(seed, 0x5eed))}
	for range max(20, n/2000) {
		g.topics = append(g.topics, g.unit())
	}
	for range max(200, n/50) {
		g.subs = append(g.subs, g.unit())
	}
	return g
}

func (g *Gen) unit() []float32 {
	v := make([]float32, g.dims)
	for i := range v {
		v[i] = float32(g.r.NormFloat64())
	}
	return normalize(v)
}

// Next returns a new vector of unit length.
func (g *Gen) Next() []float32 {
	s := g.r.IntN(len(g.subs))
	t := g.topics[s%len(g.topics)]
	sub := g.subs[s]
	v := make([]float32, g.dims)
	for i := range v {
		v[i] = t[i] + 0.7*sub[i] + 0.6*float32(g.r.NormFloat64())/float32(math.Sqrt(float64(g.dims)))
	}
	return normalize(v)
}

func normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return v
}
