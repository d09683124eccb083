-- Web origins whose pages may call the gateway's HTTP/JSON front door from a browser (CORS, docs/gateway.md), per
-- application. The handlers check each origin's form (docs/identity.md, "Allowed origins"); the table bounds the list.
-- The gateway reads the union of every application's list (IdentityInternal/ListAllowedOrigins) every 10 s.
ALTER TABLE applications ADD COLUMN allowed_origins text[] NOT NULL DEFAULT '{}'
    CONSTRAINT applications_allowed_origins_count CHECK (cardinality(allowed_origins) <= 20);
