package providertest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// EmbeddingsRequest is the decoded body of an embeddings request. Input is
// always a list, whether the client sent one string or several.
type EmbeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"-"`
	Dimensions     int      `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format,omitempty"`
	User           string   `json:"user,omitempty"`
}

// EmbedReply is one scripted answer to an embeddings request.
type EmbedReply struct {
	// Status, when not 0 or 200, answers an OpenAI-shaped error with Message.
	Status  int
	Message string
	// Vectors, when set, are answered as they are, one per input in order
	// (fewer or more than the inputs to test a provider that misbehaves).
	Vectors [][]float32
	// Dimensions, when not 0, is the length of the vectors the embedder
	// makes for this answer (a model that answers another dimension).
	Dimensions int
	// Delay holds the answer back; the wait ends early if the client goes away.
	Delay time.Duration
	// Gate, when non-nil, holds the answer until the channel is closed or
	// receives a value (or the client goes away).
	Gate <-chan struct{}
}

// embedState is the embeddings side of the server, guarded by Server.mu.
type embedState struct {
	script  []EmbedReply
	fixed   map[string][]float32
	fn      func(model, text string, dims int) []float32
	failing *EmbedReply
}

// ScriptEmbeddings queues replies, answered in order, one per embeddings
// request. Requests that find the script empty are answered by the embedder
// (HashEmbedding unless EmbedWith replaced it), or by FailEmbeddings' error.
func (s *Server) ScriptEmbeddings(replies ...EmbedReply) {
	s.mu.Lock()
	s.emb.script = append(s.emb.script, replies...)
	s.mu.Unlock()
}

// FailEmbeddings makes every embeddings request that finds the script empty
// fail with status and message, until it is called with status 0.
func (s *Server) FailEmbeddings(status int, message string) {
	s.mu.Lock()
	if status == 0 || status == http.StatusOK {
		s.emb.failing = nil
	} else {
		s.emb.failing = &EmbedReply{Status: status, Message: message}
	}
	s.mu.Unlock()
}

// SetEmbedding fixes the vector answered for one exact input text.
func (s *Server) SetEmbedding(text string, vec []float32) {
	s.mu.Lock()
	if s.emb.fixed == nil {
		s.emb.fixed = map[string][]float32{}
	}
	s.emb.fixed[text] = append([]float32(nil), vec...)
	s.mu.Unlock()
}

// EmbedWith replaces HashEmbedding as the embedder of texts without a fixed
// vector. dims is the dimension the request asked for, or the model's.
func (s *Server) EmbedWith(fn func(model, text string, dims int) []float32) {
	s.mu.Lock()
	s.emb.fn = fn
	s.mu.Unlock()
}

// EmbeddingsRequests returns the decoded embeddings requests received so far.
func (s *Server) EmbeddingsRequests() []*EmbeddingsRequest {
	var out []*EmbeddingsRequest
	for _, r := range s.Requests() {
		if r.Embeddings != nil {
			out = append(out, r.Embeddings)
		}
	}
	return out
}

// ModelDimensions is the dimension the server answers for a model when the
// request does not ask for one: 3072 for names with "large", else 1536.
func ModelDimensions(model string) int {
	if strings.Contains(model, "large") {
		return 3072
	}
	return 1536
}

// HashEmbedding is the default embedder: a deterministic unit vector that
// hashes each lower-cased word (runs of letters and digits) to a signed
// coordinate, so texts that share words are close and texts that share none
// are nearly orthogonal. A text without words gets one coordinate from the
// hash of the whole text.
func HashEmbedding(text string, dims int) []float32 {
	v := make([]float32, dims)
	if dims == 0 {
		return v
	}
	words := Words(text)
	if len(words) == 0 {
		words = []string{"\x00" + text}
	}
	for _, w := range words {
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64()
		sign := float32(1)
		if x>>63 == 1 {
			sign = -1
		}
		v[int(x%uint64(dims))] += sign
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		inv := float32(1 / math.Sqrt(n))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

// Words splits text into lower-cased runs of letters and digits, the
// tokens HashEmbedding hashes and usage counts.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var raw struct {
		EmbeddingsRequest
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		s.record(r, body)
		writeError(w, http.StatusBadRequest, "providertest: bad JSON: "+err.Error())
		return
	}
	req := raw.EmbeddingsRequest
	var one string
	if err := json.Unmarshal(raw.Input, &one); err == nil {
		req.Input = []string{one}
	} else if err := json.Unmarshal(raw.Input, &req.Input); err != nil {
		s.record(r, body)
		writeError(w, http.StatusBadRequest, "providertest: input must be a string or a list of strings")
		return
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Embeddings: &req}
	s.mu.Lock()
	if !s.discard {
		s.requests = append(s.requests, rec)
	}
	var reply EmbedReply
	switch {
	case len(s.emb.script) > 0:
		reply, s.emb.script = s.emb.script[0], s.emb.script[1:]
	case s.emb.failing != nil:
		reply = *s.emb.failing
	}
	fixed, fn := s.emb.fixed, s.emb.fn
	vectors := reply.Vectors
	if vectors == nil {
		dims := reply.Dimensions
		if dims == 0 {
			dims = req.Dimensions
		}
		if dims == 0 {
			dims = ModelDimensions(req.Model)
		}
		vectors = make([][]float32, len(req.Input))
		for i, text := range req.Input {
			if v, ok := fixed[text]; ok {
				vectors[i] = v
			} else if fn != nil {
				vectors[i] = nil // computed below, outside the lock
			} else {
				vectors[i] = HashEmbedding(text, dims)
			}
		}
		if fn != nil {
			s.mu.Unlock()
			for i, text := range req.Input {
				if vectors[i] == nil {
					vectors[i] = fn(req.Model, text, dims)
				}
			}
			s.mu.Lock()
		}
	}
	s.mu.Unlock()
	if reply.Gate != nil {
		select {
		case <-reply.Gate:
		case <-r.Context().Done():
			return
		}
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.Message)
		return
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	tokens := 0
	for _, text := range req.Input {
		tokens += max(1, len(Words(text)))
	}
	data := make([]item, len(vectors))
	for i, v := range vectors {
		data[i] = item{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			data[i].Embedding = base64.StdEncoding.EncodeToString(b)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}
