package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Field is one key of the canonical cluster block: every node must have
// the same value for each.
type Field struct{ Key, Value string }

// maxInline bounds the node lines carried one by one in a hello; beyond
// it only their hash is (which still says that cluster.nodes differs).
const maxInline = 700

// Canonical is the cluster block as compared between nodes: the keys every
// node must agree on (not Self, and not the secret, which the datagrams'
// MACs already check), in a fixed order and format. cluster.nodes comes as
// a hash of all node lines ("nodes") and, when they are short enough to fit
// one datagram, as one field per node ("nodes[ID]"). The protocol of the
// items (Protocol) comes first: nodes of two kspider versions that would
// read each other's items differently must not exchange them.
func (c *Config) Canonical() []Field {
	fs := []Field{
		{"protocol", Protocol},
		{"phases", strconv.Itoa(c.Phases)},
		{"phase_length", c.PhaseLength.String()},
		{"epoch", c.Epoch.UTC().Format(time.RFC3339Nano)},
		{"partition", c.Partition.String()},
	}
	h := sha256.New()
	var lines []Field
	size := 0
	for _, m := range c.Members {
		v := m.UDP + " " + m.Status
		fmt.Fprintf(h, "%d=%s\n", m.ID, v)
		lines = append(lines, Field{fmt.Sprintf("nodes[%d]", m.ID), v})
		size += len(v) + 12
	}
	fs = append(fs, Field{"nodes", fmt.Sprintf("%d %s", len(c.Members), hex.EncodeToString(h.Sum(nil)[:8]))})
	if size <= maxInline {
		fs = append(fs, lines...)
	}
	return fs
}

// EncodeFields writes fields as "key=value" lines.
func EncodeFields(dst []byte, fs []Field) []byte {
	for _, f := range fs {
		dst = append(dst, f.Key...)
		dst = append(dst, '=')
		dst = append(dst, f.Value...)
		dst = append(dst, '\n')
	}
	return dst
}

// DecodeFields reads what EncodeFields wrote; a line without '=' is an error.
func DecodeFields(b []byte) ([]Field, error) {
	var fs []Field
	for len(b) > 0 {
		line := b
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, ok := strings.Cut(string(line), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("cluster: config line %q is not key=value", line)
		}
		fs = append(fs, Field{k, v})
	}
	return fs, nil
}

// Diff names every key whose value differs between ours and theirs (or
// that only one side has), as "cluster.KEY: ours V1, theirs V2", in ours'
// order. Node lines missing on one side because the other side carried
// only the hash are not reported apart from "nodes".
func Diff(ours, theirs []Field) []string {
	their := make(map[string]string, len(theirs))
	for _, f := range theirs {
		their[f.Key] = f.Value
	}
	inlineTheirs := false
	for _, f := range theirs {
		if strings.HasPrefix(f.Key, "nodes[") {
			inlineTheirs = true
		}
	}
	var out []string
	mine := make(map[string]bool, len(ours))
	inlineOurs := false
	for _, f := range ours {
		mine[f.Key] = true
		inline := strings.HasPrefix(f.Key, "nodes[")
		inlineOurs = inlineOurs || inline
		v, ok := their[f.Key]
		switch {
		case !ok && inline && !inlineTheirs:
		case !ok:
			out = append(out, fmt.Sprintf("cluster.%s: ours %q, theirs has none", f.Key, f.Value))
		case v != f.Value:
			out = append(out, fmt.Sprintf("cluster.%s: ours %q, theirs %q", f.Key, f.Value, v))
		}
	}
	for _, f := range theirs {
		if !mine[f.Key] && !(strings.HasPrefix(f.Key, "nodes[") && !inlineOurs) {
			out = append(out, fmt.Sprintf("cluster.%s: ours has none, theirs %q", f.Key, f.Value))
		}
	}
	return out
}

// OwnersDiffer reports whether theirs gives URLs other owners than ours:
// another partition or another number of nodes (the count in "nodes").
// Other differences (phases, addresses) leave every URL's owner as is.
func OwnersDiffer(ours, theirs []Field) bool {
	value := func(fs []Field, key string) string {
		for _, f := range fs {
			if f.Key == key {
				return f.Value
			}
		}
		return ""
	}
	count := func(fs []Field) string {
		n, _, _ := strings.Cut(value(fs, "nodes"), " ")
		return n
	}
	return value(ours, "partition") != value(theirs, "partition") || count(ours) != count(theirs)
}
