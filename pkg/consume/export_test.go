package consume

import "time"

// ReadFloorsEvery has durables' acknowledgement floors read every d until
// the returned function restores the default.
func ReadFloorsEvery(d time.Duration) (restore func()) {
	was := floorEvery.Swap(int64(d))
	return func() { floorEvery.Store(was) }
}

// FloorsRead is how many floors have been read so far.
func FloorsRead() uint64 { return floorsRead.Load() }

// FloorsSaved is how many floors have been kept in FloorsBucket so far.
func FloorsSaved() uint64 { return floorsSaved.Load() }

// HoldEvery has held consumers ask again every d until the returned
// function restores the default.
func HoldEvery(d time.Duration) (restore func()) {
	was := holdEvery
	holdEvery = d
	return func() { holdEvery = was }
}

// KeepFloorsAgainEvery has floors that did not move kept again every d
// until the returned function restores the default.
func KeepFloorsAgainEvery(d time.Duration) (restore func()) {
	was := keptAgainEvery.Swap(int64(d))
	return func() { keptAgainEvery.Store(was) }
}
