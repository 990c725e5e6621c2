package openapi

import "github.com/getkin/kin-openapi/openapi3"

// The operations of storage destinations: each is a route's Doc in the
// origin's table.

// destinations are the organization's storage destinations.
var destinations = resource{tag: tagDestinations, note: planNote, name: "storage destination", missing: "No such destination in the organization.",
	body: "The destination.", request: schDestRequest, one: schDest, page: schDestList}

// CreateStorageDestination documents POST /v1/storage-destinations.
var CreateStorageDestination = describe("createStorageDestination", destinations.create(crud{
	summary: "Create a storage destination", ok: "Created (its connection test passed, or it is disabled with the failure recorded).",
	errors: map[int]string{400: "Invalid request, or the connection test of an enabled destination failed (validation_errors names connection_info, in the provider's words)."},
}))

// ListStorageDestinations documents GET /v1/storage-destinations.
var ListStorageDestinations = describe("listStorageDestinations", destinations.list(crud{summary: "List storage destinations", ok: "One page of destinations."}))

// GetAWSExternalID documents GET /v1/storage-destinations/aws-external-id.
var GetAWSExternalID = describe("getAWSExternalID", func(s *spec) operation {
	return operation{
		tag: tagDestinations, summary: "Get the AWS external id",
		description: "The external id Pictor sends when it assumes an aws_s3 destination's role. " + planNote,
		responses:   map[int]*openapi3.Response{200: s.jsonResponse("The external id.", schExternalID)},
	}
})

// GetStorageDestination documents GET /v1/storage-destinations/{id}.
var GetStorageDestination = describe("getStorageDestination", destinations.get(crud{summary: "Get a storage destination", ok: "The destination."}))

// UpdateStorageDestination documents POST /v1/storage-destinations/{id}.
var UpdateStorageDestination = describe("updateStorageDestination", destinations.update(crud{
	summary: "Update a storage destination", description: "Replaces the destination; a change of connection (or enabling it again) runs the connection test.", ok: "Updated.",
	errors: map[int]string{
		400: "Invalid request, or the connection test of an enabled destination failed (validation_errors names connection_info).",
		409: "The destination was changed by another request meanwhile: read it and try again.",
	},
}))

// DeleteStorageDestination documents DELETE /v1/storage-destinations/{id}.
var DeleteStorageDestination = describe("deleteStorageDestination", destinations.delete(crud{
	summary: "Delete a storage destination", description: "Objects already written stay in the bucket.", ok: "Deleted.",
}))
