// Command testserver is a small MCP server for the tests of package mcp: it speaks stdio, or
// streamable HTTP with -http, and offers tools that answer, fail, crash and hang.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

type envArgs struct {
	Name string `json:"name"`
}

type none struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer(extra bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1"}, nil)
	// Added out of order on purpose: the registry must sort.
	mcp.AddTool(s, &mcp.Tool{Name: "zeta", Description: "Last by name."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return text("zeta"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return text("echo: " + a.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers."}, func(_ context.Context, _ *mcp.CallToolRequest, a addArgs) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprint(a.A + a.B)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Say whether an environment variable is set."}, func(_ context.Context, _ *mcp.CallToolRequest, a envArgs) (*mcp.CallToolResult, any, error) {
		if _, ok := os.LookupEnv(a.Name); ok {
			return text(a.Name + " is set"), nil, nil
		}
		return text(a.Name + " is not set"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Report a tool error."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		r := text("it went wrong on purpose")
		r.IsError = true
		return r, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server process."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "testserver: crashing on request")
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		select {} // ignores cancellation, like a stuck server
	})
	mcp.AddTool(s, &mcp.Tool{Name: "weird.name/with spaces", Description: "A name the registry cannot take as it is."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return text("weird"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Offer one more tool from now on."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		addExtra(s)
		return text("grown"), nil, nil
	})
	if extra {
		addExtra(s)
	}
	return s
}

func addExtra(s *mcp.Server) {
	{
		mcp.AddTool(s, &mcp.Tool{Name: "extra", Description: "Only with -extra or after grow."}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text("extra"), nil, nil
		})
	}
}

func main() {
	httpAddr := flag.String("http", "", "serve streamable HTTP on this address and print the URL")
	extra := flag.Bool("extra", false, "offer one more tool")
	failStart := flag.Bool("fail-start", false, "exit before speaking MCP")
	flag.Parse()
	if *failStart {
		fmt.Fprintln(os.Stderr, "testserver: refusing to start")
		os.Exit(2)
	}
	if *httpAddr == "" {
		if err := newServer(*extra).Run(context.Background(), &mcp.StdioTransport{}); err != nil && !strings.Contains(err.Error(), "EOF") {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	srv := newServer(*extra)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	log.Fatal(http.Serve(ln, h))
}
