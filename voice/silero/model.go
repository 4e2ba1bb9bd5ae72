package silero

import (
	"fmt"
	"math"

	"github.com/viterin/vek/vek32"
)

// Model is one stream's detector: the shared weights of its rate, and the
// stream's own state (the LSTM's, and the end of the last window, which
// the model sees again before the next). Not safe for concurrent use.
type Model struct {
	br    *branch
	in    []float32 // context, window, reflected padding
	spec  []float32 // STFT magnitudes, [frame][bin]
	x, y  []float32 // encoder activations, [frame][channel]
	h, c  [hidden]float32
	gates [4 * hidden]float32
}

// New returns a model for a stream at sampleRate (8000 or 16000; other
// rates give ErrRate), with its state reset.
func New(sampleRate int) (*Model, error) {
	g, ok := geometries[sampleRate]
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrRate, sampleRate)
	}
	all, err := weights()
	if err != nil {
		return nil, err
	}
	br := all[sampleRate]
	n := g.context + g.window + g.pad
	frames := (n-g.filter)/g.hop + 1
	return &Model{
		br:   br,
		in:   make([]float32, n),
		spec: make([]float32, frames*g.bins),
		x:    make([]float32, frames*hidden),
		y:    make([]float32, frames*hidden),
	}, nil
}

// WindowSize is how many samples Prob takes: 256 at 8 kHz (32 ms), 512 at
// 16 kHz.
func (m *Model) WindowSize() int { return m.br.window }

// SampleRate is the rate of the model's branch.
func (m *Model) SampleRate() int { return m.br.rate }

// Reset forgets the stream so far, as at New.
func (m *Model) Reset() {
	clear(m.in)
	m.h, m.c = [hidden]float32{}, [hidden]float32{}
}

// Prob is the probability that the next window of the stream (exactly
// WindowSize samples in [-1, 1]; any other length panics) holds speech. It
// computes what the ONNX model does when fed as Silero's own wrapper feeds
// it: the last samples of the window before (zeros after Reset), then the
// window, with the LSTM's state carried from one call to the next.
func (m *Model) Prob(window []float32) float32 {
	br := m.br
	if len(window) != br.window {
		panic(fmt.Sprintf("silero: window of %d samples, want %d", len(window), br.window))
	}
	in := m.in
	copy(in, in[br.window:br.window+br.context]) // the last window's end
	copy(in[br.context:], window)
	// Reflect the end (torch's reflect padding: the edge sample is not
	// repeated).
	l := br.context + br.window
	for k := range br.pad {
		in[l+k] = in[l-2-k]
	}
	// STFT: the basis rows are the window-weighted cosines and sines; the
	// magnitude of each bin goes on.
	frames := len(m.spec) / br.bins
	for t := range frames {
		seg := in[t*br.hop : t*br.hop+br.filter]
		row := m.spec[t*br.bins : (t+1)*br.bins]
		for f := range br.bins {
			re := dot(br.basis[f*br.filter:(f+1)*br.filter], seg)
			im := dot(br.basis[(br.bins+f)*br.filter:(br.bins+f+1)*br.filter], seg)
			row[f] = float32(math.Sqrt(float64(re*re + im*im)))
		}
	}
	x, y := m.spec, m.x
	for i := range br.enc {
		frames = br.enc[i].forward(x, frames, y)
		if i == 0 {
			x, y = y, m.y
		} else {
			x, y = y, x
		}
	}
	// After the encoder one frame is left: the LSTM cell's input.
	m.lstm(x[:hidden])
	var s float32
	for j, h := range m.h {
		s += br.dw[j] * max(h, 0)
	}
	return sigmoid(s + br.db)
}

// forward runs the layer over frames frames of x ([frame][in]) into y
// ([frame][out]) and returns the frames it made. Outside x is zero
// (padding 1).
func (c *conv) forward(x []float32, frames int, y []float32) int {
	n := (frames-1)/c.stride + 1
	for t := range n {
		row := y[t*c.out : (t+1)*c.out]
		for o := range c.out {
			w := c.w[o*3*c.in : (o+1)*3*c.in]
			var s float32
			for k := range 3 {
				ti := t*c.stride + k - 1
				if ti < 0 || ti >= frames {
					continue
				}
				s += dot(w[k*c.in:(k+1)*c.in], x[ti*c.in:(ti+1)*c.in])
			}
			row[o] = max(s+c.b[o], 0)
		}
	}
	return n
}

// lstm advances the cell by one step (torch's LSTMCell: gates i, f, g, o).
func (m *Model) lstm(x []float32) {
	br := m.br
	for j := range m.gates {
		m.gates[j] = dot(br.wih[j*hidden:(j+1)*hidden], x) + br.bih[j] +
			dot(br.whh[j*hidden:(j+1)*hidden], m.h[:]) + br.bhh[j]
	}
	for j := range hidden {
		i := sigmoid(m.gates[j])
		f := sigmoid(m.gates[hidden+j])
		g := float32(math.Tanh(float64(m.gates[2*hidden+j])))
		o := sigmoid(m.gates[3*hidden+j])
		m.c[j] = f*m.c[j] + i*g
		m.h[j] = o * float32(math.Tanh(float64(m.c[j])))
	}
}

func sigmoid(x float32) float32 {
	return float32(1 / (1 + math.Exp(-float64(x))))
}

// dot is the inner product of a and b[:len(a)]: the hot loop of every
// layer, in the processor's vector instructions where it has them.
func dot(a, b []float32) float32 {
	return vek32.Dot(a, b[:len(a)])
}
