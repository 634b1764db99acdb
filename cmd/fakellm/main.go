// Command fakellm serves the deterministic scripted model of provider/fake over real HTTP, in
// the OpenAI Chat Completions (/v1/chat/completions), OpenAI Responses (/v1/responses) and
// Anthropic Messages (/v1/messages) wire formats, so tests, benchmarks and manual runs can drive real client code without a
// network or a key. The first line on stdout is the base URL it listens on ("-addr
// 127.0.0.1:0" picks a free port). It is a development tool: spool itself uses provider/fake
// in process and never starts this program.
//
//	fakellm -addr 127.0.0.1:8089 -fail rate_limit -fail-count 2 -latency 200ms
//
// The script (CALL/SAY/FAULT directives, summarizer), the cache rules and the control endpoints
// (POST /fake/fail, GET /fake/stats) are documented in provider/fake.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spoolhq/spool/provider/fake"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8089", "listen address (port 0: any free port)")
	fail := fs.String("fail", "", "fail the first -fail-count requests with this fault: auth, quota, rate_limit, overloaded, context_length, bad_request, server, cut, \"slow 2s\"")
	failCount := fs.Int("fail-count", 1, "how many requests -fail applies to")
	latency := fs.Duration("latency", 0, "delay before every answer")
	chunkDelay := fs.Duration("chunk-delay", 0, "delay between streamed chunks")
	openaiTTL := fs.Duration("openai-cache-ttl", 5*time.Minute, "OpenAI prompt-cache entry lifetime without use")
	anthropicTTL := fs.Duration("anthropic-cache-ttl", 5*time.Minute, "Anthropic prompt-cache TTL (refreshed on hit)")
	window := fs.Int("context-window", 200_000, "prompt tokens above which requests fail with context_length")
	apiKey := fs.String("api-key", "", "accept only this API key (default: any)")
	verbose := fs.Bool("v", false, "log each request to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *failCount < 1 {
		return fmt.Errorf("-fail-count must be at least 1, got %d", *failCount)
	}
	m := fake.New(fake.Config{
		OpenAICacheTTL:    *openaiTTL,
		AnthropicCacheTTL: *anthropicTTL,
		ContextWindow:     *window,
		Latency:           *latency,
		ChunkDelay:        *chunkDelay,
		APIKey:            *apiKey,
	})
	if *fail != "" {
		f, err := fake.ParseFault(*fail)
		if err != nil {
			return fmt.Errorf("-fail: %w", err)
		}
		m.FailNext(*failCount, f)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr())

	handler := m.Handler()
	if *verbose {
		logger := log.New(stderr, "fakellm ", log.LstdFlags|log.Lmicroseconds)
		inner := handler
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			logger.Printf("%s %s", r.Method, r.URL.Path)
			inner.ServeHTTP(w, r)
		})
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	s := m.Stats()
	fmt.Fprintf(stderr, "fakellm: %d requests (%d failed), %d prompt tokens, %d cached (%.1f%%), %d written to cache\n",
		s.Requests, s.Failed, s.PromptTokens, s.CachedTokens, 100*s.CacheHitRate(), s.CacheWriteTokens)
	return nil
}
