module github.com/rlock/rlock/bindings/go

go 1.22
