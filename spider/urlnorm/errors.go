package urlnorm

import "fmt"

// Reason says why an input has no URL (layer 1) or no canonical form
// (layer 2). Callers count drops by reason without parsing messages.
type Reason uint8

const (
	// ReasonInvalid: the WHATWG parser returns failure for the input.
	ReasonInvalid Reason = iota + 1
	// ReasonScheme: the URL is valid but its scheme is not http or https
	// (mailto:, javascript:, data:, ftp:, ...), so the crawler cannot fetch it.
	ReasonScheme
	// ReasonNoHost: an http(s) URL whose host is empty.
	ReasonNoHost
	// ReasonTooLong: the canonical form would exceed Options.MaxLength.
	ReasonTooLong
)

func (r Reason) String() string {
	switch r {
	case ReasonInvalid:
		return "invalid"
	case ReasonScheme:
		return "scheme"
	case ReasonNoHost:
		return "no-host"
	case ReasonTooLong:
		return "too-long"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Error is the error of every function in this package: which input, why,
// and what exactly was wrong with it.
type Error struct {
	Reason Reason
	Input  string
	Detail string // e.g. "invalid IPv6 address", `scheme "mailto"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("url %q: %s", e.Input, e.Detail)
}

// failure is the parser's internal error: a fixed message, no allocation.
// The exported functions wrap it into an *Error with the input.
type failure string

func (f failure) Error() string { return string(f) }
