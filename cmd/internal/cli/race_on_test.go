//go:build race

package cli

// raceEnabled: the race detector slows the replays of TestStoreParity
// several times over.
const raceEnabled = true
