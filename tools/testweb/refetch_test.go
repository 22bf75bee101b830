package testweb

import "testing"

func TestRefetches(t *testing.T) {
	req := func(conn uint64, start int64, target string, status int, note string) Entry {
		return Entry{Kind: "req", Conn: conn, Scheme: "http", Host: "a.test", Target: target, Start: start, End: start, Status: status, Note: note}
	}
	entries := []Entry{
		req(1, 1, "/robots.txt", 503, ""), req(2, 2, "/robots.txt", 200, ""), // retry after a 5xx
		req(2, 3, "/a", 200, "content-length too short"), req(2, 4, "/b", 200, ""), // /b garbled by /a's tail
		req(3, 5, "/a", 200, ""), req(3, 6, "/b", 200, ""), // retries
		req(3, 7, "/c", 200, "close-after"), req(4, 8, "/c", 200, ""), // a refetch
		req(4, 9, "/robots.txt", 200, ""), // a refetch
		{Kind: "conn", Conn: 4, Start: 8, End: 10},
	}
	n, list := Refetches(entries, 10)
	if n != 2 || len(list) != 2 || list[0].URL != "http://a.test/c" || list[0].Count != 2 {
		t.Fatalf("Refetches = %d %v, want 2: /c and /robots.txt", n, list)
	}
}
