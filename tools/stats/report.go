package stats

// Report is what the stats tool prints: the thesis's result tables and the
// operator's additions. Tables are sorted (count descending, then key) and cut
// to Options.Limit rows, the rest summed into one "(other)" row, so the
// output is the same for the same store whatever order the scan read it in.
type Report struct {
	Summary Summary `json:"summary"`
	// Status counts pages by HTTP status code, in code order.
	Status []Count `json:"status"`
	// ServersBySoftware counts web servers (host names) by the product of
	// their Server header (the one most of their pages sent); PagesBySoftware
	// counts pages.
	ServersBySoftware []Count `json:"servers_by_software"`
	PagesBySoftware   []Count `json:"pages_by_software"`
	// Suffixes breaks servers, machines and documents down by public suffix
	// (ac.th, co.th, com; see classifyHost).
	Suffixes []DomainRow `json:"suffixes"`
	// TopDomainsByServers and TopDomainsByDocuments rank registrable domains
	// (ku.ac.th) by distinct host names and by HTML documents.
	TopDomainsByServers   []DomainRow `json:"top_domains_by_servers"`
	TopDomainsByDocuments []DomainRow `json:"top_domains_by_documents"`
	// LinksPerPage is the distribution of outgoing links per HTML document.
	LinksPerPage []Count `json:"links_per_page"`
	// LinkMatrix counts links between public suffixes.
	LinkMatrix Matrix `json:"link_matrix"`
	// Extensions counts pages by the file extension of their URL path.
	Extensions []Count `json:"extensions"`
	// ContentTypes counts pages by media type; Charsets counts HTML
	// documents by the charset their Content-Type declares.
	ContentTypes []Count `json:"content_types"`
	Charsets     []Count `json:"charsets"`
	// PageSizes and FetchTimes are distributions of body size and fetch
	// duration over all pages.
	PageSizes  []Count `json:"page_sizes"`
	FetchTimes []Count `json:"fetch_times"`
	// Compression compares the pages' raw bytes with what the store holds on
	// disk; nil when the caller could not tell.
	Compression *Compression `json:"compression,omitempty"`
	// Problems counts pages that could not be read fully; none is fatal.
	Problems Problems `json:"problems"`
}

// Summary is the thesis's summary table.
type Summary struct {
	URLs          int64 `json:"urls"`           // pages stored
	BytesStored   int64 `json:"bytes_stored"`   // header and body bytes, uncompressed
	HTMLDocuments int64 `json:"html_documents"` // 2xx pages with an HTML media type
	HTMLBytes     int64 `json:"html_bytes"`     // body bytes of those
	WebServers    int64 `json:"web_servers"`    // distinct host names
	Machines      int64 `json:"machines"`       // distinct server IP addresses
	Domains       int64 `json:"domains"`        // distinct registrable domains
	Links         int64 `json:"links"`          // outgoing links of HTML documents
}

// Count is one row of a distribution.
type Count struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
}

// DomainRow is one row of a table by domain or suffix.
type DomainRow struct {
	Name      string `json:"name"`
	Servers   int64  `json:"servers"`   // distinct host names
	Machines  int64  `json:"machines"`  // distinct IP addresses
	Pages     int64  `json:"pages"`     // all pages
	Documents int64  `json:"documents"` // HTML documents
}

// Matrix is the link connectivity matrix: Links[i][j] counts links from
// HTML documents under suffix Names[i] to URLs under Names[j]. Names holds
// the suffixes with the most pages, then "(other)" for the rest.
type Matrix struct {
	Names []string  `json:"names"`
	Links [][]int64 `json:"links"`
}

// Compression is the store's compression ratio.
type Compression struct {
	RawBytes    int64   `json:"raw_bytes"`    // Summary.BytesStored
	StoredBytes int64   `json:"stored_bytes"` // see Options.StoredBytes
	Ratio       float64 `json:"ratio"`        // RawBytes / StoredBytes
}

// Problems counts what was wrong with pages; the pages still count where
// they can.
type Problems struct {
	BadHeaders  int64 `json:"bad_headers"`   // unparseable header block
	BadURLs     int64 `json:"bad_urls"`      // stored URL without a host
	HTMLNotUTF8 int64 `json:"html_not_utf8"` // HTML documents whose body is not valid UTF-8
	LinkErrors  int64 `json:"link_errors"`   // link extraction refused the page
	BadRecords  int64 `json:"bad_records"`   // damaged regions of segments the store skipped
	// LostPages counts pages the store's index knew of whose records are
	// damaged or gone: a region may hold many (a segment cut short).
	LostPages int64 `json:"lost_pages"`
}
