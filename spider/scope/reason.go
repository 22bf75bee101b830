package scope

import "fmt"

// Reason says why a URL was rejected; OK means it was not.
type Reason uint8

const (
	OK                Reason = iota
	BadURL                   // not an absolute http(s) URL with a host
	NotIncluded              // include rules exist and none matched
	Excluded                 // an exclude expression or a negative domain rule matched
	OutOfDomain              // domain rules exist and none matched the host
	TooLong                  // longer than MaxURLLength
	TooDeepPath              // more than MaxPathDepth path segments
	RepeatedSegment          // a path segment repeats MaxSegmentRepeat times
	CGI                      // a query or a CGI path while those are refused
	HostBudget               // the host's page budget is spent
	TooManySubdomains        // the registrable domain has too many hosts
	TooDeep                  // beyond the link depth limit
	NumReasons               // the number of reasons, for counters
)

var reasonNames = [NumReasons]string{
	OK:                "ok",
	BadURL:            "bad-url",
	NotIncluded:       "not-included",
	Excluded:          "excluded",
	OutOfDomain:       "out-of-domain",
	TooLong:           "too-long",
	TooDeepPath:       "too-deep-path",
	RepeatedSegment:   "repeated-segment",
	CGI:               "cgi",
	HostBudget:        "host-budget",
	TooManySubdomains: "too-many-subdomains",
	TooDeep:           "too-deep",
}

func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}
