package rag_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rag"
)

var topics = []string{
	"the payment was declined by the bank",
	"the parcel is delayed in transit",
	"the password reset email never arrived",
	"the invoice shows the wrong address",
	"the subscription renewed without warning",
	"the discount code is not accepted at checkout",
	"the app crashes when uploading a photo",
	"the refund has not reached the card yet",
}

// semantic embeds like a real model is weak at identifiers: it hashes the
// words of a text but not tokens with digits (error codes, order numbers).
func semantic(_, text string, dims int) []float32 {
	var words []string
	for _, w := range providertest.Words(text) {
		if !strings.ContainsAny(w, "0123456789") {
			words = append(words, w)
		}
	}
	return providertest.HashEmbedding(strings.Join(words, " "), dims)
}

// TestHybridAgainstVectorOnly evaluates hybrid retrieval (vector fused with
// full-text rank) against vector-only on two kinds of question over a help
// corpus of error codes: questions naming an exact code, where embeddings
// are weak, and paraphrases of a problem, where they are strong. Hybrid
// must win the first kind and not lose the second.
func TestHybridAgainstVectorOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.prov.EmbedWith(semantic)
	e.createCollection("errors")
	var cs []rag.Chunk
	for ti, topic := range topics {
		for n := range 20 {
			cs = append(cs, rag.Chunk{Content: fmt.Sprintf("Error E%d-%d: %s.", ti, n, topic), Metadata: map[string]any{"topic": ti}})
		}
	}
	e.ingest("errors", "codes", cs...)

	hybrid, vector := true, false
	score := func(mode *bool) (codeHit, topicPrecision float64) {
		for ti := range topics {
			for _, n := range []int{3, 11, 17} {
				hits := e.retrieve(rag.RetrieveRequest{Text: fmt.Sprintf("What does error E%d-%d mean?", ti, n), Namespace: "errors", TopK: 5, Hybrid: mode})
				for _, h := range hits {
					if strings.HasPrefix(h.Content, fmt.Sprintf("Error E%d-%d:", ti, n)) {
						codeHit++
					}
				}
			}
		}
		paraphrases := []string{"my bank declined the payment", "where is my parcel, it is delayed", "I never got the password reset email",
			"wrong address on my invoice", "why did my subscription renew", "checkout rejects my discount code",
			"app crashes on photo upload", "refund not on my card"}
		for ti, q := range paraphrases {
			for _, h := range e.retrieve(rag.RetrieveRequest{Text: q, Namespace: "errors", TopK: 5, Hybrid: mode}) {
				if h.Metadata["topic"] == float64(ti) {
					topicPrecision++
				}
				if h.Score < 0 || h.Score > 1 {
					t.Fatalf("score %v out of [0,1]", h.Score)
				}
			}
		}
		return codeHit / float64(3*len(topics)), topicPrecision / float64(5*len(paraphrases))
	}
	vc, vp := score(&vector)
	hc, hp := score(&hybrid)
	t.Logf("exact-code questions, hit@5: vector-only %.2f, hybrid %.2f", vc, hc)
	t.Logf("paraphrases, topic precision@5: vector-only %.2f, hybrid %.2f", vp, hp)
	if hc < 0.95 || hc <= vc {
		t.Fatalf("hybrid does not win exact-code questions: %.2f vs %.2f", hc, vc)
	}
	if hp < vp-0.05 {
		t.Fatalf("hybrid loses paraphrases: %.2f vs %.2f", hp, vp)
	}
}
