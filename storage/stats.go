package storage

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// DiskStats is what one store directory (one disk) holds and has left.
type DiskStats struct {
	Dir     string
	Bytes   uint64 // record bytes made durable in this directory since Open
	Records uint64 // records made durable in this directory since Open
	Failed  bool   // its saver stopped after an I/O error
	Free    uint64 // bytes free on the file system for an unprivileged writer
	Size    uint64 // the file system's size in bytes
	FreeErr error  // why Free and Size are unknown (statfs failed)
}

type saverStats struct {
	bytes, records atomic.Uint64
	failed         atomic.Bool
}

// Disks returns each store directory's figures, in Config.Dirs order. It
// asks the file system for free space (one statfs per directory) and
// touches nothing the savers hold.
func (s *Store) Disks() []DiskStats {
	out := make([]DiskStats, len(s.savers))
	for i, sv := range s.savers {
		d := DiskStats{Dir: sv.dir, Bytes: sv.stats.bytes.Load(), Records: sv.stats.records.Load(), Failed: sv.stats.failed.Load()}
		var fs unix.Statfs_t
		if err := unix.Statfs(sv.dir, &fs); err != nil {
			d.FreeErr = err
		} else {
			d.Free = fs.Bavail * uint64(fs.Bsize)
			d.Size = fs.Blocks * uint64(fs.Bsize)
		}
		out[i] = d
	}
	return out
}
