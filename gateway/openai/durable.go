package openai

import (
	"context"
	"fmt"
	"net/http"

	"github.com/spoolhq/spool/gateway"
)

// A store write that fails after the turn is never dropped: the client is told when it still
// can be (these errors; the answer itself is stored in the session), and the server log gets an
// error line naming the session either way. They are not retried by the SDKs: a retry would run
// the turn again.

// notRecorded: the turn's answer is in the session, its response record (what the response id
// names for GET, previous_response_id and idempotent replays) is not.
func notRecorded(sessionID, responseID string, err error) *apiError {
	return newError(http.StatusInternalServerError, "server_error", "response_not_recorded",
		fmt.Sprintf("the answer is stored in session %s, but response %s could not be recorded: %v", sessionID, responseID, err)).noRetry()
}

// notDeleted: a store: false response's session could not be deleted and stays stored.
func notDeleted(sessionID string, err error) *apiError {
	return newError(http.StatusInternalServerError, "server_error", "not_deleted",
		fmt.Sprintf("store: false was not honoured: session %s could not be deleted and stays stored: %v", sessionID, err)).noRetry()
}

// releaseIdem gives an idempotency key back (the request did not run); a failure is logged,
// as the key then stays claimed until it expires.
func (s *Server) releaseIdem(ctx context.Context, idem *gateway.Idem, sessionID string) {
	if idem == nil {
		return
	}
	if err := idem.Release(ctx); err != nil {
		s.o.Log.Error("spool serve: an idempotency key was not released; retries with it are refused until it expires", "session", sessionID, "err", err)
	}
}

// completeIdem records an idempotent request's outcome; a failure is logged (the answer
// itself went out and is stored in the session).
func (s *Server) completeIdem(ctx context.Context, idem *gateway.Idem, sessionID string, status int, body []byte) {
	if err := idem.Complete(ctx, status, body); err != nil {
		s.o.Log.Error("spool serve: an idempotent request's outcome was not recorded; a retry with its key is not replayed", "session", sessionID, "err", err)
	}
}
