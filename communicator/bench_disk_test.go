package communicator

import "testing"

// BenchmarkStateSave: one save of a 3-peer state file, in place (version
// 2: pwrite, fdatasync) against made whole (a new file, fsync, rename,
// directory fsync: what every version 1 save did). ns/op is wall time,
// mostly the disk's; the CPU it costs a node shows in the process's
// system time (bench cluster).
func BenchmarkStateSave(b *testing.B) {
	ents := []stateEntry{{1, 5, 9}, {2, 6, 1}, {3, 7, 2}}
	for _, whole := range []bool{false, true} {
		name := "inplace"
		if whole {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			s, err := openState(b.TempDir(), 1)
			if err != nil {
				b.Fatal(err)
			}
			defer s.close()
			s.save(1, ents)
			for i := 0; b.Loop(); i++ {
				ents[0].cum = uint32(i)
				if whole {
					err = s.create(stateSlotAlign, uint64(i+2), ents)
				} else {
					err = s.save(uint64(i+2), ents)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSpillSend: the spill path of a cluster node's items without
// its fsyncs: 8 items appended per tick, then read for sending, the
// records written every 4th tick (the writer's sync). ns/op is per item;
// "fileread" turns the write-through off, so each read flushes and
// preads, as before it.
func BenchmarkSpillSend(b *testing.B) {
	us := benchURLs(4096)
	for _, through := range []bool{true, false} {
		name := "writethrough"
		if !through {
			name = "fileread"
		}
		b.Run(name, func(b *testing.B) {
			s, err := openSpill(b.TempDir(), 1, 2, 1000, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer s.close()
			if !through {
				s.mem.limit = 1
			}
			var q queue
			k := 0
			for i := 0; b.Loop(); i++ {
				s.append(1, us[i%len(us)])
				if i%8 != 7 {
					continue
				}
				q.reset()
				if err := s.readChunk(&q, 1<<20); err != nil || q.len() != 8 {
					b.Fatal(err, q.len())
				}
				if k++; k%4 == 0 {
					if err := s.flush(); err != nil {
						b.Fatal(err)
					}
					if err := s.mark(s.readOff, true); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
