module example.com/ownlock

go 1.26.0

require github.com/fencecheck/fencecheck v0.0.0

require github.com/anishathalye/porcupine v1.3.1 // indirect

replace github.com/fencecheck/fencecheck => ../../..
