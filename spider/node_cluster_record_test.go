package spider

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reopenNode closes node i of cfgs (its Run returned) and opens it again
// on its directory and address, as a restart would.
func reopenNode(t *testing.T, cfgs []NodeConfig, i int, n *Node) *Node {
	t.Helper()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := net.ResolveUDPAddr("udp", cfgs[i].Cluster.Config.Members[i].UDP)
	if err != nil {
		t.Fatal(err)
	}
	if cfgs[i].Cluster.Comm.Conn, err = net.ListenUDP("udp", a); err != nil {
		t.Fatal(err)
	}
	n, err = OpenNode(cfgs[i])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestClusterRecordDamaged: DIR/CLUSTER, what a node saw lost, damaged at
// a random byte, is refused by name at the next start: read as empty it
// would have the run end 0 with the losses forgotten.
func TestClusterRecordDamaged(t *testing.T) {
	r := clusterRecord{lostDirs: map[int]bool{2: true, 0: true}, taken: map[int]uint64{1: 512, 3: 7}, heard: map[int]uint64{1: 1 << 50, 2: 9}, unheard: map[int]uint64{2: 70}}
	b := r.encode()
	got, ok := decodeClusterRecord(b)
	if !ok || !got.lostDirs[0] || !got.lostDirs[2] || len(got.lostDirs) != 2 || got.taken[1] != 512 || got.taken[3] != 7 || len(got.taken) != 2 ||
		got.heard[1] != 1<<50 || got.heard[2] != 9 || len(got.heard) != 2 || got.unheard[2] != 70 || len(got.unheard) != 1 {
		t.Fatalf("decoding %q: %+v, %v", b, got, ok)
	}
	// Version 2, without the URLs taken before a hello not yet come, is
	// still read; with such a line it is not version 2.
	v2 := r.encodeVersion(2)
	if got, ok := decodeClusterRecord(v2); !ok || got.heard[1] != 1<<50 || len(got.unheard) != 0 {
		t.Errorf("decoding version 2's %q: %+v, %v", v2, got, ok)
	}
	v2unheard := []byte("kspider cluster 2\nunheard 1 9\n")
	if _, ok := decodeClusterRecord(append(v2unheard, dirFileSum(v2unheard)...)); ok {
		t.Error("version 2 with an unheard line decoded")
	}
	// Version 1, without the peers' epochs, is still read.
	v1 := []byte("kspider cluster 1\nover\nlost_dir 2\nlost_urls 1 512\n")
	v1 = append(v1, dirFileSum(v1)...)
	if got, ok := decodeClusterRecord(v1); !ok || !got.over || !got.lostDirs[2] || got.taken[1] != 512 || len(got.heard) != 0 {
		t.Errorf("decoding version 1's %q: %+v, %v", v1, got, ok)
	}
	if _, ok := decodeClusterRecord(r.encodeVersion(1)[:0]); ok {
		t.Error("an empty file decoded")
	}
	v1heard := []byte("kspider cluster 1\nheard 1 9\n")
	if _, ok := decodeClusterRecord(append(v1heard, dirFileSum(v1heard)...)); ok {
		t.Error("version 1 with a heard line decoded")
	}
	dir := t.TempDir()
	if r, err := readClusterRecord(dir); err != nil || len(r.lostDirs)+len(r.taken) != 0 {
		t.Fatalf("no file: %+v, %v; want nothing lost", r, err)
	}
	for range 200 {
		d := append([]byte(nil), b...)
		switch i := rand.IntN(len(d) + 1); {
		case i == len(d):
			d = d[:rand.IntN(len(d))] // torn
		default:
			d[i] ^= byte(1 << rand.IntN(8))
		}
		if err := os.WriteFile(filepath.Join(dir, ClusterFile), d, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readClusterRecord(dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, ClusterFile)+" is damaged") || errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%q: err %v; want the file named damaged", d, err)
		}
	}
}

// TestCheckClusterFileUnheard: kspider check says what DIR/CLUSTER
// records of URLs taken before a peer's hello that has not come yet.
func TestCheckClusterFileUnheard(t *testing.T) {
	dir := t.TempDir()
	r := emptyClusterRecord()
	r.unheard[1], r.heard[1] = 70, 9
	if err := writeDirFile(dir, ClusterFile, r.encode()); err != nil {
		t.Fatal(err)
	}
	says, err := CheckClusterFile(dir)
	if want := "70 URLs of node 1 taken before its hello, which has not come yet"; err != nil || says != want {
		t.Errorf("CheckClusterFile: %q, %v; want %q", says, err, want)
	}
}
