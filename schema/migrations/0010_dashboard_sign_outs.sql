CREATE TABLE `dashboard_sign_outs` (
	`email` text PRIMARY KEY NOT NULL,
	`signed_out_at` integer NOT NULL
);
