package urlnorm

// Temporary net/url-based implementation so spider/links can land its API;
// replaced by the WHATWG parser.

import (
	"net/url"
	"strings"
)

type URL struct {
	u    *url.URL
	href string
}

func (u *URL) Href() string   { return u.href }
func (u *URL) String() string { return u.href }

func Parse(raw string) (*URL, error) { return ParseRef(nil, raw) }

func ParseRef(base *URL, ref string) (*URL, error) {
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return nil, &Error{Reason: ReasonInvalid, Input: ref, Detail: err.Error()}
	}
	if base != nil {
		r = base.u.ResolveReference(r)
	}
	if !r.IsAbs() {
		return nil, &Error{Reason: ReasonInvalid, Input: ref, Detail: "relative URL without a base"}
	}
	return &URL{u: r, href: r.String()}, nil
}

type Options struct {
	StripSessionIDs bool
	SortQuery       bool
}

func AppendCanonical(dst []byte, base *URL, ref string, opts *Options) ([]byte, error) {
	u, err := ParseRef(base, ref)
	if err != nil {
		return dst, err
	}
	if u.u.Scheme != "http" && u.u.Scheme != "https" {
		return dst, &Error{Reason: ReasonScheme, Input: ref, Detail: "scheme " + u.u.Scheme}
	}
	c := *u.u
	c.Fragment = ""
	c.User = nil
	c.Host = strings.ToLower(c.Host)
	if c.Path == "" {
		c.Path = "/"
	}
	return append(dst, c.String()...), nil
}

func Canonical(base *URL, ref string, opts *Options) (string, error) {
	b, err := AppendCanonical(nil, base, ref, opts)
	return string(b), err
}
