package openapi

import "github.com/getkin/kin-openapi/openapi3"

// The operations of storage destinations: each is a route's Doc in the
// origin's table.

// CreateStorageDestination documents POST /v1/storage-destinations.
var CreateStorageDestination = describe("createStorageDestination", func(s *spec) operation {
	return operation{
		tag: tagDestinations, summary: "Create a storage destination", description: planNote,
		body: s.jsonBody("The destination.", schDestRequest),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("Created (its connection test passed, or it is disabled with the failure recorded).", schDest),
			400: s.errorResponse("Invalid request, or the connection test of an enabled destination failed (validation_errors names connection_info, in the provider's words)."),
		},
	}
})

// ListStorageDestinations documents GET /v1/storage-destinations.
var ListStorageDestinations = describe("listStorageDestinations", func(s *spec) operation {
	return operation{
		tag: tagDestinations, summary: "List storage destinations", description: planNote,
		params: s.refs(parCount, parPageStart),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("One page of destinations.", schDestList),
			400: s.invalid(),
		},
	}
})

// GetAWSExternalID documents GET /v1/storage-destinations/aws-external-id.
var GetAWSExternalID = describe("getAWSExternalID", func(s *spec) operation {
	return operation{
		tag: tagDestinations, summary: "Get the AWS external id",
		description: "The external id Pictor sends when it assumes an aws_s3 destination's role. " + planNote,
		responses:   map[int]*openapi3.Response{200: s.jsonResponse("The external id.", schExternalID)},
	}
})

// GetStorageDestination documents GET /v1/storage-destinations/{id}.
var GetStorageDestination = describe("getStorageDestination", func(s *spec) operation {
	return operation{
		tag: tagDestinations, summary: "Get a storage destination", description: planNote,
		params: params(idParam("storage destination")),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("The destination.", schDest),
			400: s.invalid(),
			404: s.notFound("No such destination in the organization."),
		},
	}
})

// UpdateStorageDestination documents POST /v1/storage-destinations/{id}.
var UpdateStorageDestination = describe("updateStorageDestination", func(s *spec) operation {
	return operation{
		tag: tagDestinations, summary: "Update a storage destination",
		description: "Replaces the destination; a change of connection (or enabling it again) runs the connection test. " + planNote,
		params:      params(idParam("storage destination")),
		body:        s.jsonBody("The destination.", schDestRequest),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("Updated.", schDest),
			400: s.errorResponse("Invalid request, or the connection test of an enabled destination failed (validation_errors names connection_info)."),
			404: s.notFound("No such destination in the organization."),
			409: s.errorResponse("The destination was changed by another request meanwhile: read it and try again."),
		},
	}
})

// DeleteStorageDestination documents DELETE /v1/storage-destinations/{id}.
var DeleteStorageDestination = describe("deleteStorageDestination", func(s *spec) operation {
	return operation{
		tag: tagDestinations, summary: "Delete a storage destination",
		description: "Objects already written stay in the bucket. " + planNote,
		params:      params(idParam("storage destination")),
		responses: map[int]*openapi3.Response{
			204: emptyResponse("Deleted."),
			400: s.invalid(),
			404: s.notFound("No such destination in the organization."),
		},
	}
})
