// Package markup is the one HTML writer of spool's browser pages (package web and the key
// sign-in of gateway/uilogin). Pages are Go code: the markup around values is the caller's own
// constant text, and every value written into it is escaped unless it is an HTML, markup that
// this writer or the browser's markdown renderer built from escaped text. Escaped text is safe
// in element content and in a double-quoted attribute value; a value placed in a URL path is
// first made a path segment with Seg (percent-encoded), then escaped like any other.
//
// The pages used html/template before; it reaches methods by name through reflection, which
// keeps every exported method of every type in the binary. This writer reflects on nothing.
package markup
