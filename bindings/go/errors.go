package rlock

import (
	"errors"
	"fmt"
)

// Code is a status code of the rlock C library (a negative RLOCK_E* value).
type Code int

// The C library's status codes (values are fixed by its ABI). header_tables_test.go checks
// them, codeNames and sentinels against rlock.h (docs/errors.md: adding a status code).
const (
	CodeError       Code = -1  // generic failure; read the message
	CodeTimedOut    Code = -2  // the wait passed while another owner held the lock
	CodeNotHeld     Code = -3  // release/extend of a lock nobody holds
	CodeCanceled    Code = -4  // the acquire was cancelled
	CodeConnection  Code = -5  // Redis unreachable, I/O error, command timeout
	CodeInvalid     Code = -6  // invalid argument; the message names it
	CodeNoMemory    Code = -7  // out of memory in this process
	CodeVersion     Code = -8  // library and binding versions do not match
	CodeInternal    Code = -9  // a bug caught at the C boundary
	CodeUser        Code = -10 // reserved for binding callbacks
	CodeLost        Code = -11 // this owner held the lock but lost it
	CodeNotOwner    Code = -12 // release/extend of a lock another owner holds
	CodeAuth        Code = -13 // Redis rejected the credentials
	CodeNoPerm      Code = -14 // the Redis user lacks a permission (ACL)
	CodeUnsupported Code = -15 // the server lacks a command or feature
	CodeRedis       Code = -16 // another Redis error reply
	CodeRedisOOM    Code = -17 // Redis refused a write: maxmemory reached
	CodeBusy        Code = -18 // Redis is busy running a long script
	CodeReadOnly    Code = -19 // the server is a read-only replica
	CodeClosed      Code = -20 // the client or handle was closed
	CodeDeadlock    Code = -21 // a reader asked for the write lock, or a holder asked again (non-reentrant)
	CodeBadHandle   Code = -22 // a freed C handle was used (a binding bug: values check first)
	CodeNotSynced   Code = -23 // replicas did not confirm the acquire in time; it was taken back
	CodeForked      Code = -24 // a handle made before fork() was used in the child process
	CodeTLS         Code = -25 // TLS handshake or certificate verification failed; read the message
)

// Sentinels for errors.Is. Every error this package returns is an *Error, whose Is method
// matches it against these through the table below.
var (
	ErrNotObtained     = errors.New("rlock: lock not obtained")
	ErrNotHeld         = errors.New("rlock: lock not held")
	ErrNotOwner        = errors.New("rlock: lock held by another owner")
	ErrLockLost        = errors.New("rlock: lock lost")
	ErrCanceled        = errors.New("rlock: acquire canceled")
	ErrClosed          = errors.New("rlock: closed")
	ErrConnection      = errors.New("rlock: connection error")
	ErrAuth            = errors.New("rlock: authentication failed")
	ErrPermission      = errors.New("rlock: permission denied")
	ErrInvalidArgument = errors.New("rlock: invalid argument")
	ErrVersion         = errors.New("rlock: version mismatch")
	ErrUnsupported     = errors.New("rlock: unsupported by the server")
	ErrRedis           = errors.New("rlock: redis error")
	ErrRedisOOM        = errors.New("rlock: redis out of memory")
	ErrBusy            = errors.New("rlock: redis busy")
	ErrReadOnly        = errors.New("rlock: redis is read-only")
	ErrDeadlock        = errors.New("rlock: would deadlock")
	ErrOutOfMemory     = errors.New("rlock: out of memory")
	ErrInternal        = errors.New("rlock: internal error")
	ErrNotSynced       = errors.New("rlock: replicas did not confirm the acquire")
	ErrForked          = errors.New("rlock: made before fork() in a parent process")
	ErrTLS             = errors.New("rlock: TLS failed")
)

// The one table from C codes to sentinels. CodeError and CodeUser match none (use errors.As).
// CodeNotOwner also matches ErrNotHeld (the caller does not hold the lock either way), and the
// Redis refusals also match ErrRedis.
var sentinels = map[Code][]error{
	CodeTimedOut:    {ErrNotObtained},
	CodeNotHeld:     {ErrNotHeld},
	CodeCanceled:    {ErrCanceled},
	CodeConnection:  {ErrConnection},
	CodeInvalid:     {ErrInvalidArgument},
	CodeNoMemory:    {ErrOutOfMemory},
	CodeVersion:     {ErrVersion},
	CodeInternal:    {ErrInternal},
	CodeLost:        {ErrLockLost},
	CodeNotOwner:    {ErrNotOwner, ErrNotHeld},
	CodeAuth:        {ErrAuth},
	CodeNoPerm:      {ErrPermission},
	CodeUnsupported: {ErrUnsupported},
	CodeRedis:       {ErrRedis},
	CodeRedisOOM:    {ErrRedisOOM, ErrRedis},
	CodeBusy:        {ErrBusy, ErrRedis},
	CodeReadOnly:    {ErrReadOnly, ErrRedis},
	CodeClosed:      {ErrClosed},
	CodeDeadlock:    {ErrDeadlock},
	CodeBadHandle:   {ErrClosed},
	CodeNotSynced:   {ErrNotSynced},
	CodeForked:      {ErrForked},
	CodeTLS:         {ErrTLS},
}

var codeNames = map[Code]string{
	CodeError: "RLOCK_ERROR", CodeTimedOut: "RLOCK_ETIMEDOUT", CodeNotHeld: "RLOCK_ENOTHELD",
	CodeCanceled: "RLOCK_ECANCELED", CodeConnection: "RLOCK_ECONN", CodeInvalid: "RLOCK_EINVAL",
	CodeNoMemory: "RLOCK_ENOMEM", CodeVersion: "RLOCK_EVERSION", CodeInternal: "RLOCK_EINTERNAL",
	CodeUser: "RLOCK_EUSER", CodeLost: "RLOCK_ELOST", CodeNotOwner: "RLOCK_ENOTOWNER",
	CodeAuth: "RLOCK_EAUTH", CodeNoPerm: "RLOCK_ENOPERM", CodeUnsupported: "RLOCK_EUNSUPPORTED",
	CodeRedis: "RLOCK_EREDIS", CodeRedisOOM: "RLOCK_EOOM", CodeBusy: "RLOCK_EBUSY",
	CodeReadOnly: "RLOCK_EREADONLY", CodeClosed: "RLOCK_ECLOSED", CodeDeadlock: "RLOCK_EDEADLK",
	CodeBadHandle: "RLOCK_EBADHANDLE", CodeNotSynced: "RLOCK_ENOTSYNCED", CodeForked: "RLOCK_EFORKED",
	CodeTLS: "RLOCK_ETLS",
}

// String returns the C name of the code, such as "RLOCK_ETIMEDOUT".
func (c Code) String() string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return fmt.Sprintf("rlock code %d", int(c))
}

// Error is the error type of this package: a C status code and a message naming the problem.
// Errors caused by a context also unwrap to ctx.Err(), so errors.Is(err, context.Canceled) or
// errors.Is(err, context.DeadlineExceeded) holds for them.
type Error struct {
	Code    Code
	Message string
	cause   error
}

func (e *Error) Error() string {
	return "rlock: " + e.Message
}

// Is reports whether target is one of the sentinels the table maps e.Code to.
func (e *Error) Is(target error) bool {
	for _, s := range sentinels[e.Code] {
		if s == target {
			return true
		}
	}
	return false
}

// Unwrap returns the context error behind a cancelled or timed-out acquire, else nil.
func (e *Error) Unwrap() error {
	return e.cause
}

func newError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *Error {
	return newError(CodeInvalid, format, args...)
}
