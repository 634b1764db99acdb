package uilogin

import (
	"net/http"
	"strconv"
	"time"
)

// refuse answers a limited request: 429 with Retry-After in whole seconds, rounded up.
func refuse(w http.ResponseWriter, prefix string, wait time.Duration) {
	secs := max(int((wait+time.Second-1)/time.Second), 1)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	page(w, http.StatusTooManyRequests, pageData{Prefix: prefix, Title: "Too many attempts", Login: false,
		Error: "Too many failed sign-ins from this address: try again in " + strconv.Itoa(secs) + " s."})
}
