package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kspider/kspider/spider"
)

// checkIdentity verifies a node's DIR/IDENTITY (spider.DirIdentity). A
// damaged one cannot be rebuilt here, as nothing else says whose share of
// the URLs the directory holds: the operator, who knows, deletes it and
// the node records it anew at its next start. One the start refuses
// otherwise (of a newer kspider, unreadable) is a problem like DEPTH's:
// as an error it ended the check, the directory's other files unchecked.
func checkIdentity(dir string, repair bool, w io.Writer) (problems int, err error) {
	id, err := spider.ReadDirIdentity(dir)
	path := filepath.Join(dir, spider.IdentityFile)
	if errors.Is(err, spider.ErrIdentityDamaged) {
		fmt.Fprintf(w, "identity: %v\n", err)
		fmt.Fprintf(w, "identity: %s: cannot repair: delete it if you know which node's directory this is; that node records it anew when it starts\n", path)
		return 1, nil
	}
	return reportDirFile(w, "identity", dir, spider.IdentityFile, id.String(), err)
}
