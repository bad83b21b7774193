//go:build race

package models

// raceDetector: the test binary runs under the race detector, which makes the generated
// agreement tests' CPU-bound repetitions about five times slower; they run at their
// -short sizes there (the plain pass runs them whole; FENCECHECK_AGREE_N sets any size).
const raceDetector = true
