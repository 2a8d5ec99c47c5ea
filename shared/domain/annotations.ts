/**
 * Service tags become Kubernetes annotations, split on the first ':' only; a tag without ':' maps to
 * an empty value, and `a:b:c` keeps `b` (the rest is dropped, as the seed specifies).
 */
export function tagsToAnnotations(tags: readonly string[]): Record<string, string> {
  const annotations: Record<string, string> = {};
  for (const tag of tags) {
    const [key = '', value = ''] = tag.split(':');
    if (key.trim() === '') continue;
    annotations[key.trim()] = value.trim();
  }
  return annotations;
}
