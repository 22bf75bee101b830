package scheduler

import (
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"
)

// TestTornHostPages: a torn host record (kept after a crash, its name
// verifying) whose count of pages admitted a flipped bit had lowered kept
// that count, and the host was admitted pages past its budget; now the
// count of a torn record is its URLs.
func TestTornHostPages(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	h, err := s.Host("a.example")
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint32(7) {
		if ok, err := s.AdmitPage(h, 8); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if _, err := s.AddHost(id, h, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, hostsName)
	b := s.hostsF.data[headerSize+int(h)*hostRecSize:]
	binary.LittleEndian.PutUint32(b[36:], 1) // the pages: its checksum is the old one
	s.closeFiles()                           // kill -9
	s = mustOpen(t, dir, basicConfig(clk))
	defer s.Close()
	o := s.Opened()
	info, err := s.HostInfo(h)
	if err != nil {
		t.Fatal(err)
	}
	if o.TornHosts != 1 || o.PagesRaised != 1 || info.Pages != 7 {
		t.Errorf("torn record in %s: TornHosts %d, PagesRaised %d, pages %d; want 1, 1, 7", p, o.TornHosts, o.PagesRaised, info.Pages)
	}
	admitted := 0
	for range 8 {
		if ok, _ := s.AdmitPage(h, 8); ok {
			admitted++
		}
	}
	if admitted != 1 {
		t.Errorf("%d pages admitted under a budget of 8 with 7 URLs; want 1", admitted)
	}
}
