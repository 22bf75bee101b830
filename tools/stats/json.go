package stats

import (
	"encoding/json"
	"io"
)

// WriteJSON writes r as indented JSON (the field names are in Report's tags).
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
