package silero

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
)

// weightsFile is Silero VAD v5 converted from its ONNX file by
// scripts/silero/convert (the format is described there).
//
//go:embed silero_vad.bin
var weightsFile []byte

// Errors.
var (
	// ErrRate: the model has branches for 8 and 16 kHz only.
	ErrRate = errors.New("silero: unsupported sample rate (8000 or 16000)")
	// ErrWeights: the embedded weights file is not what this code reads.
	ErrWeights = errors.New("silero: invalid weights file")
)

// geometry is what one rate's branch of the model does around its
// weights, as scripts/silero/convert.mjs checks it in the ONNX graph.
type geometry struct {
	rate    int
	window  int // samples a call to Prob takes
	context int // samples of the window before, prepended
	filter  int // STFT length
	hop     int // STFT hop
	pad     int // reflected samples appended before the STFT
	bins    int // STFT bins, filter/2+1
}

var geometries = map[int]geometry{
	16000: {rate: 16000, window: 512, context: 64, filter: 256, hop: 128, pad: 64, bins: 129},
	8000:  {rate: 8000, window: 256, context: 32, filter: 128, hop: 64, pad: 32, bins: 65},
}

// hidden is the width of the encoder's output and of the LSTM.
const hidden = 128

// conv is one encoder layer: kernel 3, padding 1, then ReLU. Its weights
// are kept [out][tap][in] (the model's are [out][in][tap]) so that each
// output is three dot products over contiguous memory.
type conv struct {
	in, out, stride int
	w               []float32
	b               []float32
}

// branch is the weights of one sample rate.
type branch struct {
	geometry
	basis []float32 // STFT as a convolution, [2*bins][filter]: real parts then imaginary
	enc   [4]conv
	wih   []float32 // LSTM cell, [4*hidden][hidden], gates i, f, g, o
	whh   []float32
	bih   []float32
	bhh   []float32
	dw    []float32 // the 1x1 output convolution, [hidden]
	db    float32
}

// weights decodes the embedded file once: every model shares the
// read-only weights (2 MB), so a call costs only its small state.
var weights = sync.OnceValues(func() (map[int]*branch, error) {
	return decode(weightsFile)
})

type tensor struct {
	dims []int
	data []float32
}

func decode(b []byte) (map[int]*branch, error) {
	if len(b) < 12 || string(b[:8]) != "SILERO5\x00" {
		return nil, fmt.Errorf("%w: bad magic", ErrWeights)
	}
	n := int(binary.LittleEndian.Uint32(b[8:]))
	p := 12
	short := fmt.Errorf("%w: truncated", ErrWeights)
	tensors := make(map[string]tensor, n)
	for range n {
		if p+2 > len(b) {
			return nil, short
		}
		nl := int(binary.LittleEndian.Uint16(b[p:]))
		p += 2
		if p+nl+1 > len(b) {
			return nil, short
		}
		name := string(b[p : p+nl])
		rank := int(b[p+nl])
		p += nl + 1
		if p+4*rank > len(b) {
			return nil, short
		}
		t := tensor{dims: make([]int, rank)}
		size := 1
		for i := range rank {
			t.dims[i] = int(binary.LittleEndian.Uint32(b[p:]))
			size *= t.dims[i]
			p += 4
		}
		if size < 0 || p+4*size > len(b) {
			return nil, short
		}
		t.data = make([]float32, size)
		for i := range t.data {
			t.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[p:]))
			p += 4
		}
		tensors[name] = t
	}
	out := make(map[int]*branch, len(geometries))
	for rate, g := range geometries {
		br, err := newBranch(g, strconv.Itoa(rate)+"/", tensors)
		if err != nil {
			return nil, err
		}
		out[rate] = br
	}
	return out, nil
}

func newBranch(g geometry, prefix string, tensors map[string]tensor) (*branch, error) {
	var err error
	get := func(name string, dims ...int) []float32 {
		t, ok := tensors[prefix+name]
		if !ok {
			err = errors.Join(err, fmt.Errorf("%w: no %s%s", ErrWeights, prefix, name))
			return nil
		}
		if fmt.Sprint(t.dims) != fmt.Sprint(dims) {
			err = errors.Join(err, fmt.Errorf("%w: %s%s is %v, want %v", ErrWeights, prefix, name, t.dims, dims))
			return nil
		}
		return t.data
	}
	br := &branch{geometry: g}
	br.basis = get("stft.forward_basis_buffer", 2*g.bins, 1, g.filter)
	in := g.bins
	for i, l := range []struct{ out, stride int }{{hidden, 1}, {64, 2}, {64, 2}, {hidden, 1}} {
		pre := "encoder." + strconv.Itoa(i) + ".reparam_conv."
		w := get(pre+"weight", l.out, in, 3)
		c := conv{in: in, out: l.out, stride: l.stride, b: get(pre+"bias", l.out)}
		if w != nil {
			c.w = make([]float32, len(w))
			for o := range l.out {
				for j := range in {
					for k := range 3 {
						c.w[(o*3+k)*in+j] = w[(o*in+j)*3+k]
					}
				}
			}
		}
		br.enc[i] = c
		in = l.out
	}
	br.wih = get("decoder.rnn.weight_ih", 4*hidden, hidden)
	br.whh = get("decoder.rnn.weight_hh", 4*hidden, hidden)
	br.bih = get("decoder.rnn.bias_ih", 4*hidden)
	br.bhh = get("decoder.rnn.bias_hh", 4*hidden)
	br.dw = get("decoder.decoder.2.weight", 1, hidden, 1)
	if db := get("decoder.decoder.2.bias", 1); db != nil {
		br.db = db[0]
	}
	if err != nil {
		return nil, err
	}
	return br, nil
}
