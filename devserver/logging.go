package devserver

import (
	"context"
	"log/slog"

	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts Temporal's logger interface to slog, dropping Debug
// and Info before any tag is formatted: the server logs a lot at those
// levels and formatting its tags is not free.
type serverLogger struct{ l *slog.Logger }

var (
	_ tlog.Logger      = serverLogger{}
	_ tlog.WithLogger  = serverLogger{}
	_ tlog.SLogWrapper = serverLogger{}
)

func (s serverLogger) Debug(string, ...tag.Tag) {}

func (s serverLogger) Info(string, ...tag.Tag) {}

func (s serverLogger) Warn(msg string, tags ...tag.Tag) { s.log(slog.LevelWarn, msg, tags) }

func (s serverLogger) Error(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

func (s serverLogger) DPanic(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }

func (s serverLogger) SLog() *slog.Logger { return s.l }

func (s serverLogger) With(tags ...tag.Tag) tlog.Logger {
	return serverLogger{slog.New(s.l.Handler().WithAttrs(attrs(tags)))}
}

func (s serverLogger) Panic(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(msg)
}

// Fatal panics instead of exiting: the server calls it when it cannot go on
// (e.g. a port it must listen on is taken) and does not expect it to return;
// a library must not os.Exit its host, and a panic shows where it happened.
func (s serverLogger) Fatal(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(msg)
}

func (s serverLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if s.l.Enabled(ctx, level) {
		s.l.LogAttrs(ctx, level, msg, attrs(tags)...)
	}
}

func attrs(tags []tag.Tag) []slog.Attr {
	out := make([]slog.Attr, len(tags))
	for i, t := range tags {
		out[i] = slog.Any(t.Key(), t.Value())
	}
	return out
}

// logOff is a level above any record's: it turns a minLevelHandler off.
const logOff = slog.Level(1 << 20)

// minLevelHandler passes on only records at min or above.
type minLevelHandler struct {
	min slog.Leveler
	h   slog.Handler
}

func (m minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min.Level() && m.h.Enabled(ctx, l)
}

func (m minLevelHandler) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }

func (m minLevelHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevelHandler{m.min, m.h.WithAttrs(a)}
}

func (m minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{m.min, m.h.WithGroup(name)}
}
