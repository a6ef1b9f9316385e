// The consumer of the release check verify_gomod (scripts/release/gomod.sh): a module of its own,
// built outside the repository, which gets the binding with
// `go get github.com/rlock/rlock/bindings/go@v<version>` from the release's module proxy files.
module rlock-gomod-check

go 1.22
