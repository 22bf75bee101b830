package spider

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDataDirSymlinkedFiles: DIR/LOCK, or the temporary file IDENTITY is
// written through, made a symbolic link to another file (a system file,
// for a node running as root). The lock's pid and the identity were
// written into the link's target, truncating it; now a linked LOCK is
// refused, naming it, and the temporary file is made anew: the target is
// left as it was.
func TestDataDirSymlinkedFiles(t *testing.T) {
	for _, name := range []string{"LOCK", IdentityFile + ".tmp", DepthFile + ".tmp"} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			victim := filepath.Join(tmp, "passwd")
			const content = "root:x:0:0:root:/root:/bin/bash\n"
			if err := os.WriteFile(victim, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(tmp, "node")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			n, err := OpenNode(NodeConfig{Dir: dir, Lookup: noLookup})
			if err == nil {
				err = n.Close()
			}
			t.Logf("open: %v", err)
			if b, _ := os.ReadFile(victim); string(b) != content {
				t.Errorf("the file %s linked to holds %q now", name, b)
			}
		})
	}
}
