-- Display names are limited in characters as people count them (grapheme clusters, checked by the service) and
-- in bytes (checked here too). length() counts code points, which is neither: 64 letters with combining marks
-- passed the service and then failed this check, and 64 emoji flags (128 code points) could never be stored.
ALTER TABLE users DROP CONSTRAINT users_display_name_check,
    ADD CONSTRAINT users_display_name_bytes CHECK (octet_length(display_name) BETWEEN 1 AND 256);
ALTER TABLE user_app_profiles DROP CONSTRAINT user_app_profiles_display_name_check,
    ADD CONSTRAINT user_app_profiles_display_name_bytes CHECK (octet_length(display_name) BETWEEN 1 AND 256);
