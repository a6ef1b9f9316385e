module rlock-release-check

go 1.22

require github.com/rlock/rlock/bindings/go v0.0.0

replace github.com/rlock/rlock/bindings/go => ../../../bindings/go
