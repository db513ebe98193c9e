// nodemailer 9 (the last whose engines take Debian 12's node 18) ships no types; email.ts states the
// part of its API it uses (SmtpTransport, below the import) and casts to it: the module is all it declares.
declare module "nodemailer";
