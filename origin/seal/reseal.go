package seal

// ResealCount is what a pass that seals stored values again under the
// current master key (the Reseal method of a store of sealed values) did
// with one kind of record.
type ResealCount struct {
	// Records is how many records holding a sealed value the pass read.
	Records int `json:"records"`
	// Resealed is how many of them it sealed again under the current key:
	// they were under a previous key, or in an older format.
	Resealed int `json:"resealed"`
	// Failed is how many it left as they were because no key of the box
	// opens them (or the record does not decode): a value sealed under a
	// key the process was not given, or damaged. Each is logged by record
	// id.
	Failed int `json:"failed"`
}

// Add adds o's counts to c.
func (c *ResealCount) Add(o ResealCount) {
	c.Records += o.Records
	c.Resealed += o.Resealed
	c.Failed += o.Failed
}
