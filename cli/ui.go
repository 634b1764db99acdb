package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/web"
)

func (a *app) uiCommand() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Browse sessions in a web browser (loopback only; prints a one-time sign-in URL)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return &usageError{fmt.Errorf("bad --addr %q: %v", addr, err)}
			}
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return &usageError{fmt.Errorf("--addr %q is not a loopback address: spool ui serves this machine only (use spool serve for a network)", addr)}
			}
			st, err := a.openStore(ctx)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			token := web.NewLoginToken()
			ui := web.New(st, web.Options{Prefix: "/ui", LoginToken: token})
			defer ui.Close()
			mux := http.NewServeMux()
			mux.Handle("/ui/", ui)
			mux.Handle("/ui", ui)
			mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/ui/", http.StatusSeeOther)
			})
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			url := fmt.Sprintf("http://%s/ui/?token=%s", ln.Addr(), token)
			if a.json {
				if err := a.printJSON(map[string]string{"url": url}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "spool ui: open %s\n(the link signs one browser in, once; Ctrl-C stops)\n", url)
			}
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case err := <-errc:
				return fmt.Errorf("serve: %w", err)
			case <-ctx.Done():
			}
			ui.Close() // end live streams so Shutdown does not wait on them
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("shut down: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8377", "loopback address to listen on (port 0 picks a free one)")
	return cmd
}
