// Imported first by the entry point: the AWS SDK reads this when its modules load, and fogbridge
// runs on Node 20 locally on purpose (Lambda runs 22).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
