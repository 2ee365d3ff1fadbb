package service

// For the fuzz targets, which live in package service_test so that they
// can use the real stores.
var (
	CheckoutYAML  = checkoutYAML
	BillionLaughs = billionLaughs
)
