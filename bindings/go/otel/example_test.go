package rlockotel_test

import (
	"context"
	"log"

	rlock "github.com/rlock/rlock/bindings/go"
	rlockotel "github.com/rlock/rlock/bindings/go/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Compiled, not run: it needs a Redis server and an exporter.
func ExampleRegister() {
	client, err := rlock.NewClient("") // $RLOCK_URL or redis://127.0.0.1:6379
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	reader := sdkmetric.NewManualReader() // or sdkmetric.NewPeriodicReader(exporter)
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	reg, err := rlockotel.Register(client, provider,
		rlockotel.WithAttributes(attribute.String("rlock.client", "orders")))
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()
}
