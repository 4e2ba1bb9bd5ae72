package rag

import (
	"context"
	"errors"
	"fmt"
	"math"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/provider"
)

// embedded is the outcome of embedding a list of texts.
type embedded struct {
	vectors [][]float32
	tokens  int
}

// embed embeds texts with the collection's model in batches, checking that
// every vector has the collection's dimension. Errors:
// ErrProviderNotConfigured, ErrEmbeddingFailed, ErrModelMismatch, or ctx's.
func (s *Service) embed(ctx context.Context, c Collection, texts []string) (embedded, error) {
	m, err := s.cfg.Models.Resolve(c.Model)
	if errors.Is(err, provider.ErrNotConfigured) || errors.Is(err, provider.ErrUnknownProvider) {
		return embedded{}, fmt.Errorf("%w: %v", ErrProviderNotConfigured, err)
	}
	if err != nil {
		return embedded{}, fmt.Errorf("%w: %v", ErrEmbeddingFailed, err)
	}
	out := embedded{vectors: make([][]float32, 0, len(texts))}
	for start := 0; start < len(texts); start += s.cfg.EmbedBatch {
		batch := texts[start:min(start+s.cfg.EmbedBatch, len(texts))]
		req := openai.EmbeddingRequestStrings{Input: batch, Model: openai.EmbeddingModel(m.Name)}
		if isModelFamily3(m.Name) {
			// These models shorten to any dimension on request; others
			// answer their native one, checked below.
			req.Dimensions = c.Dimensions
		}
		resp, err := m.Client.CreateEmbeddings(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return embedded{}, ctx.Err()
			}
			return embedded{}, fmt.Errorf("%w: %s: %s", ErrEmbeddingFailed, c.Model, provider.Describe(err))
		}
		if len(resp.Data) != len(batch) {
			return embedded{}, fmt.Errorf("%w: %s answered %d vectors for %d texts", ErrEmbeddingFailed, c.Model, len(resp.Data), len(batch))
		}
		vecs := make([][]float32, len(batch))
		for _, d := range resp.Data {
			if d.Index < 0 || d.Index >= len(batch) || vecs[d.Index] != nil {
				return embedded{}, fmt.Errorf("%w: %s answered a bad vector index", ErrEmbeddingFailed, c.Model)
			}
			if len(d.Embedding) != c.Dimensions {
				return embedded{}, fmt.Errorf("%w: %s answered %d dimensions and collection %s holds %d; nothing was stored",
					ErrModelMismatch, c.Model, len(d.Embedding), c.Name, c.Dimensions)
			}
			for _, x := range d.Embedding {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return embedded{}, fmt.Errorf("%w: %s answered a vector that is not finite", ErrEmbeddingFailed, c.Model)
				}
			}
			vecs[d.Index] = d.Embedding
		}
		out.vectors = append(out.vectors, vecs...)
		out.tokens += resp.Usage.PromptTokens
	}
	return out, nil
}
