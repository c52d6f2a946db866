package broker

// retain forgets the oldest done jobs beyond Config.DoneRetention: their
// records leave every index and their memory is released (a chunk of
// records is freed once all of its jobs are forgotten). They stay counted
// as done.
func (b *Broker) retain() {
	if b.cfg.DoneRetention < 0 {
		return
	}
	for b.dones.n > b.cfg.DoneRetention {
		j := b.dones.head
		b.dones.remove(j)
		b.age.move(j.id, Done, 0)
		j.host.idx.add(int(j.hostPos), Done, -1)
		for _, tr := range b.trees {
			if tr != nil {
				tr.remove(j)
			}
		}
		b.forgot++
		b.jobs.forget(j)
	}
}
