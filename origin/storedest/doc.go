// Package storedest manages storage destinations (/v1/storage-destinations):
// the S3-compatible buckets of an organization that rendered files are also
// written to (spec §2.2 storage_destination_id, §2.6; compat.md "Storage
// destinations"). It validates requests, runs the connection test through
// origin/storage when the connection changes, keeps the records with their
// secret access keys sealed, lists them with cursors, answers the
// organization's AWS external id, and gives the render path Store.Get and
// Store.Connection.
//
// # Keys
//
// Every key of the package starts with "sd/". Values are JSON unless noted.
//
//	sd/r/<id>            destination record (the secret access key sealed in it)
//	sd/o/<org_id>/<id>   empty; an organization's destinations in creation order (ids are UUIDv7)
//	sd/x/<org_id>        the organization's AWS external id (text)
//
// A destination's keys are written and removed in one batch, under its
// organization's write lock.
//
// # Decisions
//
//   - Storage destinations need the plan with 10,000 images a month or a
//     larger one (plan.Plan.Delivery: pro and scale). On a smaller plan
//     every route (create, list, get, update, delete and aws-external-id)
//     answers 403 naming that requirement and the organization's plan,
//     whatever the key's permissions (spec §5 rule 3). CheckPlan runs in
//     the route table before the rate limit (a refusal costs no allowance)
//     and again in every handler. After a downgrade the destinations stay
//     stored, out of reach; they come back with the plan.
//   - Requests are JSON only (415 otherwise): connection_info is an object.
//     Types are strict. Unknown fields are ignored, at the top level and in
//     connection_info (so that an answer can be sent back), with one
//     exception: a setting of another provider sent with a value (region
//     for google_cloud_storage, role_arn or access keys for aws_s3,
//     endpoint for wasabi, ...) is a 400 naming connection_info.<field>:
//     it is a mistake that would otherwise go unnoticed. null counts as not
//     sent, and retain_secret_access_key false asks for nothing.
//   - Create and update are the same request; update is a full replacement
//     (what is omitted takes its default). name is required, 3 to 255
//     characters after surrounding blanks are trimmed, no control
//     characters. disabled and hcti_storage_disabled default to false.
//   - connection_info: provider is one of aws_s3, cloudflare_r2,
//     backblaze_b2, digitalocean_spaces, wasabi, google_cloud_storage,
//     other_s3_compatible. bucket follows S3's rules for general purpose
//     buckets whatever the provider: 3 to 63 lower-case letters, digits,
//     dots and hyphens, a letter or digit at each end and around every dot,
//     not an IPv4 address, none of S3's reserved prefixes (xn--, sthree-,
//     amzn-s3-demo-) and suffixes (-s3alias, --ol-s3, .mrap, --x-s3,
//     --table-s3). key_prefix is optional: leading and trailing slashes are
//     dropped and runs of slashes made one; "." and ".." segments and
//     control characters are refused; at most 512 bytes. Answers show it
//     as stored, null for the bucket's root.
//   - aws_s3: region and role_arn (arn:<partition>:iam::<12 digits>:role/
//     [path/]<name>, partitions aws, aws-cn and aws-us-gov, the region in
//     the same partition: a role is only assumed within its own).
//     cloudflare_r2: cloudflare_account_id (32 hexadecimal digits, stored
//     lower-case) and cloudflare_jurisdiction (eu, fedramp, or null/omitted
//     or "default" for the default jurisdiction; answered null).
//     backblaze_b2, digitalocean_spaces, wasabi: region, lower-cased, with
//     origin/storage's rule (storage.CheckRegion: B2's shape such as
//     us-west-004, the published lists of Spaces and Wasabi regions).
//     google_cloud_storage: no setting of its own. other_s3_compatible:
//     endpoint, an absolute http(s) URL stored as scheme://host[:port][/path]
//     (scheme and host lower-case, default port and trailing slash dropped,
//     no credentials, query, fragment or percent-encoding; a path of plain
//     segments is kept for gateways that serve S3 under one); an ASCII host
//     or IP literal; a loopback, private or metadata address literal or a
//     local name is refused unless --allow-private-urls (metadata never);
//     names are the storage client's to check when it dials. region
//     (default us-east-1, kept as sent: it only signs requests) and
//     force_path_style (default true).
//   - Access-key providers (all but aws_s3) require access_key_id and
//     secret_access_key: printable ASCII without spaces, at most 256
//     characters. An empty secret_access_key counts as not sent.
//     retain_secret_access_key: true keeps the stored secret on an update
//     when one is stored and the provider, the access_key_id and (for
//     other_s3_compatible) the endpoint are the same: a key is only ever
//     used where it was given, since a request signed for a host of the
//     caller's could be relayed to the real one. Sent with a secret, on a
//     creation, or when a condition fails, it is a 400 naming
//     connection_info.retain_secret_access_key (the message says why).
//     Neither a secret nor retain is a 400 naming secret_access_key.
//   - The connection test (Handler.Test, origin/storage's write of a test
//     object) runs on creation, on an update that changes any connection
//     setting as normalized (provider, bucket, key_prefix, region,
//     role_arn, account id, jurisdiction, endpoint, force_path_style,
//     access key id, or a secret different from the stored one), and on an
//     update that enables a disabled destination; never on a change of
//     name, hcti_storage_disabled or disabling alone. It gets the opened
//     secret, or for aws_s3 the role and the organization's external id.
//     Settings origin/storage cannot use (storage.Connection.Validate) are
//     a 400 naming the field before any test.
//   - An enabled destination whose test fails is not saved: 400 with the
//     provider's error in words in the message and in validation_errors
//     on connection_info; an update leaves the destination as it was. A
//     disabled one is saved with the failure recorded. last_tested_at,
//     last_test_succeeded and last_test_error (null after a success) tell
//     the last test; last_test_error is Handler.Describe's wording
//     (storage.Describe), one line, at most 1000 characters, with the
//     secret blanked out should it ever appear. A caller that goes away
//     during the test leaves nothing recorded.
//   - Updates of one destination run one at a time, from the read to the
//     write (the test included), so each starts from the last one's result
//     and a test result always belongs to the connection stored with it;
//     other destinations are not held up. A destination deleted during an
//     update's test stays deleted (404).
//   - The secret access key is sealed with the origin's seal.Box, the
//     destination's id as additional data (a sealed secret cannot be moved
//     to another record); Store.Connection opens it and stores a value in
//     the legacy sealed format again in the current one. Secrets never
//     appear in answers (not even their length or whether one is stored),
//     logs or error messages.
//   - The AWS external id is "pictor-" and 128 random bits in lower-case
//     base32, made at the organization's first need (the
//     aws-external-id route or an aws_s3 destination) under its lock, so
//     concurrent first calls agree, and fixed for the organization's life.
//     GET /v1/storage-destinations/aws-external-id needs
//     storage_destinations:read and counts against storage-destination:read.
//   - ids are UUIDv7 (lists sort by creation); a malformed {id} is a 400
//     naming id; another organization's id and an unknown one give the same
//     404. Lists are newest first, disabled destinations included; count 1
//     to 100 (default 10) and page_start as for every management list.
//     Create answers 200, delete 204; deleting a destination never touches
//     objects already written to its bucket. Timestamps are UTC with
//     milliseconds.
package storedest
