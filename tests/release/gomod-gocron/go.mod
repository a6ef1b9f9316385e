// The consumer of the release check gomod_check_gocron (scripts/release/gomod.sh): a module of
// its own, built outside the repository, which gets the gocron module with
// `go get github.com/rlock/rlock/bindings/go/gocron@v<version>` from the release's module proxy
// files (the base module too; gocron itself from the public proxy).
module rlock-gomod-gocron-check

go 1.22
