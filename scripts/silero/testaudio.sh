#!/usr/bin/env bash
# Makes the test audio of voice/silero: a caller's sentence with short
# inner pauses (the pauses a VAD must not end a turn on), spoken by
# espeak-ng, with silence around it, at 8 and 16 kHz; and the same with pink
# noise at 10 dB SNR (a noisy phone line). convert.mjs runs the ONNX model
# on these files for the reference outputs; the Go tests read them.
#
#   scripts/silero/testaudio.sh [out-dir]   # default voice/silero/testdata
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../../voice/silero/testdata}"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# rms FILE: the RMS amplitude sox measures (full scale 1).
rms() { sox "$1" -n stat 2>&1 | awk '/RMS +amplitude/ {print $3}'; }

for rate in 8000 16000; do
  k=$((rate / 1000))k
  i=0
  for phrase in "I would like to book a table for Tuesday." "My number is four five six" "seven eight nine, thank you."; do
    espeak-ng -v en-us -s 160 -w "$tmp/raw$i.wav" "$phrase"
    sox "$tmp/raw$i.wav" -r "$rate" -c 1 -b 16 "$tmp/seg$i.wav" silence 1 0.01 0.5% reverse silence 1 0.01 0.5% reverse
    i=$((i + 1))
  done
  # Pauses of 400 and 700 ms between the phrases, 600 ms before, 3 s after.
  sox "$tmp/seg0.wav" "$tmp/seg1.wav" "$tmp/seg2.wav" "$tmp/speechonly.wav"
  sox "$tmp/seg0.wav" "$tmp/p0.wav" pad 0.6 0.4
  sox "$tmp/seg1.wav" "$tmp/p1.wav" pad 0 0.7
  sox "$tmp/seg2.wav" "$tmp/p2.wav" pad 0 3
  sox "$tmp/p0.wav" "$tmp/p1.wav" "$tmp/p2.wav" "$out/speech$k.wav"
  len="$(soxi -D "$out/speech$k.wav")"
  # Pink noise scaled to 10 dB below the speech's own RMS (measured over the
  # phrases only, not the pauses).
  sox -R -n -r "$rate" -c 1 -b 16 "$tmp/noise.wav" synth "$len" pinknoise vol 0.1
  gain="$(awk -v s="$(rms "$tmp/speechonly.wav")" -v n="$(rms "$tmp/noise.wav")" 'BEGIN {print s / n / sqrt(10)}')"
  sox -m -v 1 "$out/speech$k.wav" -v "$gain" "$tmp/noise.wav" "$out/noisy$k.wav"
done
