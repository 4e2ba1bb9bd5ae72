package sip

import (
	"context"
	"log/slog"
)

// libraryLog is the handler sipgo and diago log through. They attach what
// a peer sent (the raw message as "data", the request or response as
// "req" or "res", its From and To) to their records, some at error level:
// a peer could write into the box's logs at will. The handler drops those
// attributes and shortens errors, which can quote what failed to parse.
type libraryLog struct{ slog.Handler }

// peerContent are the attribute keys under which the libraries log what a
// peer sent.
var peerContent = map[string]bool{"data": true, "req": true, "res": true, "msg": true, "req.from": true, "req.to": true}

// maxLibraryError bounds an error's text in a library record.
const maxLibraryError = 120

func (h libraryLog) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		switch {
		case peerContent[a.Key]:
		case a.Key == "error":
			if s := a.Value.String(); len(s) > maxLibraryError {
				a = slog.String("error", s[:maxLibraryError]+"…")
			}
			out.AddAttrs(a)
		default:
			out.AddAttrs(a)
		}
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h libraryLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return libraryLog{h.Handler.WithAttrs(attrs)}
}

func (h libraryLog) WithGroup(name string) slog.Handler {
	return libraryLog{h.Handler.WithGroup(name)}
}
